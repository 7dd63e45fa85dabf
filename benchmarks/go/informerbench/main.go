// Command informerbench runs informer_bench.py's two workloads with client-go's
// SharedIndexInformer, so the Python numbers have a Go yardstick measured on
// the same cluster in the same run.
//
//	informerbench -mode sync -namespace bench-sync [-strip] [-content-type json] [-http1] [-then-updates]
//	informerbench -mode events -namespace bench-events -since RV -events 20000 [-strip] [-content-type json] [-http1]
//
// It prints one JSON object on stdout (two with -then-updates, see below).
//
// The terms are the Python side's, so the two do the same work:
//   - The connection is warm: the program asks for the server's version
//     (GET /version, as the course's kube.connect() does) before the clock
//     starts, and the informer's requests reuse that connection. The output
//     says how many connections were opened while the clock ran
//     ("connections_opened") and which HTTP version the informer's requests
//     used ("http"), read from the requests themselves.
//   - client-go negotiates HTTP/2 by itself; -http1 offers the server only
//     HTTP/1.1 (rest.Config's TLSClientConfig.NextProtos), which is what the
//     Python clients (urllib3) speak.
//   - -strip drops managedFields before an object is cached, as the course's
//     informer does by default, in both workloads.
//   - The events workload counts updates under a mutex, as the Python
//     handler counts under a lock.
//
// Whether the informer filled its cache with a LIST or with a streaming
// watch-list (sendInitialEvents=true, client-go's default since 1.35) is read
// from the requests it made ("list_mode"); KUBE_FEATURE_WatchListClient=false
// in the environment turns streaming lists off.
//
// Sync time is taken by polling HasSynced every millisecond: the usual
// cache.WaitForCacheSync polls every 100 ms, which would round the figure up.
//
// With -then-updates, after the sync's row the program reads one line from
// stdin, "NAMESPACE/NAME TOKEN": the caller has updated some of the cached
// ConfigMaps, the last of them (by resourceVersion) NAME, each setting
// data.round to TOKEN. Once the cache holds NAME with that value, every
// earlier update has been applied too (a watch delivers in order), and the
// program measures its memory again and prints a second object.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// requestRecorder sees every request the client makes: it counts the
// informer's list and watch requests by kind (so the output says which way the
// cache was filled), the HTTP versions the responses came in, and the
// connections opened rather than reused.
type requestRecorder struct {
	next                       http.RoundTripper
	lists, watches, watchLists atomic.Int64
	opened                     atomic.Int64

	mutex     sync.Mutex
	protocols map[string]int
}

func (r *requestRecorder) RoundTrip(request *http.Request) (*http.Response, error) {
	query := request.URL.Query()
	switch {
	case request.URL.Path == "/version":
	case query.Get("watch") == "true" && query.Get("sendInitialEvents") == "true":
		r.watchLists.Add(1)
	case query.Get("watch") == "true":
		r.watches.Add(1)
	default:
		r.lists.Add(1)
	}
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if !info.Reused {
			r.opened.Add(1)
		}
	}}
	request = request.WithContext(httptrace.WithClientTrace(request.Context(), trace))
	response, err := r.next.RoundTrip(request)
	if err == nil && request.URL.Path != "/version" {
		r.mutex.Lock()
		r.protocols[response.Proto]++
		r.mutex.Unlock()
	}
	return response, err
}

func (r *requestRecorder) listMode() string {
	switch {
	case r.watchLists.Load() > 0 && r.lists.Load() == 0:
		return "streaming"
	case r.watchLists.Load() == 0:
		return "list"
	default:
		return "both"
	}
}

// http is the HTTP version of the informer's requests ("HTTP/1.1", "HTTP/2"),
// or every version seen, joined, should they differ.
func (r *requestRecorder) http() string {
	r.mutex.Lock()
	defer r.mutex.Unlock()
	var seen []string
	for proto := range r.protocols {
		seen = append(seen, strings.Replace(proto, "HTTP/2.0", "HTTP/2", 1))
	}
	return strings.Join(seen, ", ")
}

// rssBytes is the resident set size, read as Python's benchmark reads it.
func rssBytes() int64 {
	raw, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		fail("reading /proc/self/statm: %v", err)
	}
	pages, err := strconv.ParseInt(strings.Fields(string(raw))[1], 10, 64)
	if err != nil {
		fail("parsing /proc/self/statm: %v", err)
	}
	return pages * int64(os.Getpagesize())
}

// settledMemory collects garbage and hands freed pages back to the OS, the
// Go counterpart of the Python side's gc.collect() before it reads RSS.
func settledMemory() (rss int64, heap uint64) {
	runtime.GC()
	debug.FreeOSMemory()
	var stats runtime.MemStats
	runtime.ReadMemStats(&stats)
	return rssBytes(), stats.HeapAlloc
}

// peakRSSMiB is VmHWM, not getrusage's Maxrss: on Linux a child starts with
// its parent's Maxrss, so a small child would report the parent's peak.
func peakRSSMiB() float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fail("reading /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if fields := strings.Fields(line); len(fields) >= 2 && fields[0] == "VmHWM:" {
			kib, err := strconv.ParseFloat(fields[1], 64)
			if err != nil {
				fail("parsing VmHWM: %v", err)
			}
			return kib / 1024
		}
	}
	fail("/proc/self/status has no VmHWM line")
	return 0
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "informerbench: "+format+"\n", args...)
	os.Exit(1)
}

// options are the command line's choices about the client.
type options struct {
	kubeconfig  string
	contentType string // "" keeps client-go's default; "json" is what the Python informers speak
	http1       bool
	strip       bool
}

// connect builds the clientset and opens its connection (GET /version)
// before the caller starts its clock, as kube.connect() does for the Python
// side. The recorder's connection count starts after that request.
func connect(opts options) (*kubernetes.Clientset, *requestRecorder) {
	config, err := clientcmd.BuildConfigFromFlags("", opts.kubeconfig)
	if err != nil {
		fail("loading the kubeconfig %q: %v", opts.kubeconfig, err)
	}
	recorder := &requestRecorder{protocols: map[string]int{}}
	config.Wrap(func(next http.RoundTripper) http.RoundTripper {
		recorder.next = next
		return recorder
	})
	// The informer's own requests are not throttled by QPS (watches are
	// exempt and a sync is one list), but a low burst could still delay the
	// first one behind the /version call; give it room as the Python side has.
	config.QPS, config.Burst = 1000, 1000
	if opts.http1 {
		config.TLSClientConfig.NextProtos = []string{"http/1.1"}
	}
	switch opts.contentType {
	case "":
	case "json":
		config.ContentType, config.AcceptContentTypes = "application/json", "application/json"
	case "protobuf":
		config.ContentType = "application/vnd.kubernetes.protobuf"
		config.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	default:
		fail("-content-type must be json or protobuf, not %q", opts.contentType)
	}
	client := kubernetes.NewForConfigOrDie(config)
	if _, err := client.Discovery().ServerVersion(); err != nil {
		fail("asking the API server for its version: %v", err)
	}
	recorder.opened.Store(0)
	return client, recorder
}

// stripManagedFields drops managedFields before an object enters the cache.
// client-go has no ready-made transform for it (controller-runtime's
// cache.TransformStripManagedFields is this), so the program brings its own.
func stripManagedFields(obj any) (any, error) {
	if accessor, err := meta.Accessor(obj); err == nil {
		accessor.SetManagedFields(nil)
	}
	return obj, nil
}

func setTransform(informer cache.SharedIndexInformer, strip bool) {
	if !strip {
		return
	}
	if err := informer.SetTransform(stripManagedFields); err != nil {
		fail("setting the transform: %v", err)
	}
}

func waitSynced(informer cache.SharedIndexInformer, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for !informer.HasSynced() {
		if time.Now().After(deadline) {
			fail("the informer did not sync within %s", timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// connectionFields are what every row says about the connection it used.
func connectionFields(recorder *requestRecorder, opened int64) map[string]any {
	return map[string]any{"http": recorder.http(), "connections_opened": opened}
}

func measureSync(opts options, namespace string, thenUpdates bool) {
	client, recorder := connect(opts)
	rssBefore, heapBefore := settledMemory()
	started := time.Now()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace(namespace))
	informer := factory.Core().V1().ConfigMaps().Informer()
	setTransform(informer, opts.strip)
	stop := make(chan struct{})
	factory.Start(stop)
	waitSynced(informer, 10*time.Minute)
	seconds := time.Since(started).Seconds()
	opened := recorder.opened.Load()
	objects := int64(len(informer.GetStore().ListKeys()))
	rssAfter, heapAfter := settledMemory()
	row := map[string]any{
		"impl":                  "client-go",
		"content_type":          opts.contentType,
		"strip_managed_fields":  opts.strip,
		"list_mode":             recorder.listMode(),
		"objects":               objects,
		"sync_seconds":          round3(seconds),
		"peak_rss_mib":          round1(peakRSSMiB()),
		"bytes_per_object":      (rssAfter - rssBefore) / objects,
		"heap_bytes_per_object": (int64(heapAfter) - int64(heapBefore)) / objects,
	}
	for key, value := range connectionFields(recorder, opened) {
		row[key] = value
	}
	emit(row)
	if thenUpdates {
		key, token := readUpdateNotice()
		waitForValue(informer.GetStore(), key, token, 10*time.Minute)
		rssUpdated, heapUpdated := settledMemory()
		emit(map[string]any{
			"bytes_per_object_after_updates":      (rssUpdated - rssBefore) / objects,
			"heap_bytes_per_object_after_updates": (int64(heapUpdated) - int64(heapBefore)) / objects,
			"peak_rss_mib_after_updates":          round1(peakRSSMiB()),
		})
	}
	close(stop)
}

// readUpdateNotice reads the caller's "NAMESPACE/NAME TOKEN" line.
func readUpdateNotice() (key, token string) {
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil {
		fail("reading the update notice from stdin: %v", err)
	}
	fields := strings.Fields(line)
	if len(fields) != 2 {
		fail("the update notice must be \"NAMESPACE/NAME TOKEN\", not %q", line)
	}
	return fields[0], fields[1]
}

// waitForValue polls the cache every 10 ms until ConfigMap key has data.round == token.
func waitForValue(store cache.Store, key, token string, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for {
		if item, exists, err := store.GetByKey(key); err == nil && exists {
			if item.(*corev1.ConfigMap).Data["round"] == token {
				return
			}
		}
		if time.Now().After(deadline) {
			fail("%s never had data.round=%s in the cache within %s", key, token, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func measureEvents(opts options, namespace, since string, events int64) {
	client, recorder := connect(opts)
	configMaps := client.CoreV1().ConfigMaps(namespace)
	// List the collection as it was at `since`, so the watch that follows
	// replays every update made after it (informer_bench.py's ListFromThen).
	listWatch := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, options metav1.ListOptions) (k8sruntime.Object, error) {
			options.ResourceVersion = since
			options.ResourceVersionMatch = metav1.ResourceVersionMatchExact
			return configMaps.List(ctx, options)
		},
		WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			return configMaps.Watch(ctx, options)
		},
	}
	var mutex sync.Mutex
	var updates int64
	done := make(chan struct{})
	cpu, started := cpuSeconds(), time.Now()
	informer := cache.NewSharedIndexInformer(listWatch, &corev1.ConfigMap{}, 0, cache.Indexers{})
	setTransform(informer, opts.strip)
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, _ any) {
			mutex.Lock()
			defer mutex.Unlock()
			updates++
			if updates == events {
				close(done)
			}
		},
	})
	if err != nil {
		fail("adding the handler: %v", err)
	}
	stop := make(chan struct{})
	go informer.Run(stop)
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		mutex.Lock()
		fail("only %d of %d events arrived", updates, events)
	}
	seconds, cpu := time.Since(started).Seconds(), cpuSeconds()-cpu
	opened := recorder.opened.Load()
	close(stop)
	row := map[string]any{
		"impl":                 "client-go",
		"content_type":         opts.contentType,
		"strip_managed_fields": opts.strip,
		"list_mode":            recorder.listMode(),
		"events":               events,
		"seconds":              round3(seconds),
		"events_per_second":    int64(float64(events)/seconds + 0.5),
		"client_cpu_seconds":   round3(cpu),
	}
	for key, value := range connectionFields(recorder, opened) {
		row[key] = value
	}
	emit(row)
}

func emit(row map[string]any) {
	row["go"] = runtime.Version()
	if err := json.NewEncoder(os.Stdout).Encode(row); err != nil {
		fail("writing the result: %v", err)
	}
}

// cpuSeconds is the CPU time (user and system) the process has used so far,
// as Python's time.process_time() reads it on the other side.
func cpuSeconds() float64 {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		fail("reading the CPU time: %v", err)
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano()).Seconds()
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }
func round1(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }

func main() {
	var opts options
	mode := flag.String("mode", "", "sync or events")
	flag.StringVar(&opts.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "path to a kubeconfig")
	namespace := flag.String("namespace", "", "the namespace to cache")
	flag.BoolVar(&opts.strip, "strip", false, "drop managedFields before caching (as ours does)")
	flag.StringVar(&opts.contentType, "content-type", "", "json or protobuf (default: client-go's own)")
	flag.BoolVar(&opts.http1, "http1", false, "offer the server HTTP/1.1 only (default: HTTP/2 when it agrees)")
	thenUpdates := flag.Bool("then-updates", false,
		"sync: then read \"NAMESPACE/NAME TOKEN\" from stdin, wait for it in the cache, measure memory again")
	since := flag.String("since", "", "events: the resourceVersion to replay from")
	events := flag.Int64("events", 20000, "events: how many updates to wait for")
	flag.Parse()
	if *namespace == "" {
		fail("give the namespace to cache with -namespace")
	}
	switch *mode {
	case "sync":
		measureSync(opts, *namespace, *thenUpdates)
	case "events":
		if *since == "" {
			fail("-mode events needs the resourceVersion to replay from (-since)")
		}
		measureEvents(opts, *namespace, *since, *events)
	default:
		fail("-mode must be sync or events, not %q", *mode)
	}
}
