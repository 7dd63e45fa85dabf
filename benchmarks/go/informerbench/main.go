// Command informerbench runs informer_bench.py's two workloads with client-go's
// SharedIndexInformer, so the Python numbers have a Go yardstick measured on
// the same cluster in the same run.
//
//	informerbench -mode sync -namespace bench-sync -count 10001 [-strip]
//	informerbench -mode events -namespace bench-events -since RV -events 5000
//
// It prints one JSON object on stdout. Whether the informer listed with a LIST
// or with a streaming watch-list (sendInitialEvents=true, client-go's default
// since 1.35) is read from the requests it actually made, so the caller can
// say which it measured; KUBE_FEATURE_WatchListClient=false in the
// environment turns streaming lists off.
//
// Sync time is taken by polling HasSynced every millisecond: the usual
// cache.WaitForCacheSync polls every 100 ms, which would round the figure up.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
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

// requestCounter counts the informer's list and watch requests by kind, so
// the output says which way the cache was filled.
type requestCounter struct {
	next                       http.RoundTripper
	lists, watches, watchLists atomic.Int64
}

func (c *requestCounter) RoundTrip(request *http.Request) (*http.Response, error) {
	query := request.URL.Query()
	switch {
	case query.Get("watch") == "true" && query.Get("sendInitialEvents") == "true":
		c.watchLists.Add(1)
	case query.Get("watch") == "true":
		c.watches.Add(1)
	default:
		c.lists.Add(1)
	}
	return c.next.RoundTrip(request)
}

func (c *requestCounter) listMode() string {
	switch {
	case c.watchLists.Load() > 0 && c.lists.Load() == 0:
		return "streaming"
	case c.watchLists.Load() == 0:
		return "list"
	default:
		return "both"
	}
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

// contentType is what the client asks the API server for: "" keeps
// client-go's default, "json" matches the Python informers.
var contentType string

func connect(kubeconfig string) (*kubernetes.Clientset, *requestCounter) {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		fail("loading the kubeconfig %q: %v", kubeconfig, err)
	}
	counter := &requestCounter{}
	config.Wrap(func(next http.RoundTripper) http.RoundTripper {
		counter.next = next
		return counter
	})
	// The informer's own requests are not throttled by QPS (watches are
	// exempt and a sync is one list), but a low burst could still delay the
	// first one behind a discovery call; give it room as the Python side has.
	config.QPS, config.Burst = 1000, 1000
	switch contentType {
	case "":
	case "json":
		config.ContentType, config.AcceptContentTypes = "application/json", "application/json"
	case "protobuf":
		config.ContentType = "application/vnd.kubernetes.protobuf"
		config.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	default:
		fail("-content-type must be json or protobuf, not %q", contentType)
	}
	return kubernetes.NewForConfigOrDie(config), counter
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

func waitSynced(informer cache.SharedIndexInformer, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for !informer.HasSynced() {
		if time.Now().After(deadline) {
			fail("the informer did not sync within %s", timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

func measureSync(kubeconfig, namespace string, strip bool) map[string]any {
	client, counter := connect(kubeconfig) // before the first reading, as the Python side
	rssBefore, heapBefore := settledMemory()
	started := time.Now()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace(namespace))
	informer := factory.Core().V1().ConfigMaps().Informer()
	if strip {
		if err := informer.SetTransform(stripManagedFields); err != nil {
			fail("setting the transform: %v", err)
		}
	}
	stop := make(chan struct{})
	factory.Start(stop)
	waitSynced(informer, 10*time.Minute)
	seconds := time.Since(started).Seconds()
	objects := len(informer.GetStore().ListKeys())
	rssAfter, heapAfter := settledMemory()
	result := map[string]any{
		"impl":                  "client-go",
		"strip_managed_fields":  strip,
		"list_mode":             counter.listMode(),
		"objects":               objects,
		"sync_seconds":          round3(seconds),
		"peak_rss_mib":          round1(peakRSSMiB()),
		"bytes_per_object":      (rssAfter - rssBefore) / int64(objects),
		"heap_bytes_per_object": (int64(heapAfter) - int64(heapBefore)) / int64(objects),
	}
	close(stop)
	return result
}

func measureEvents(kubeconfig, namespace, since string, events int64) map[string]any {
	client, counter := connect(kubeconfig)
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
	var updates atomic.Int64
	done := make(chan struct{})
	started := time.Now()
	informer := cache.NewSharedIndexInformer(listWatch, &corev1.ConfigMap{}, 0, cache.Indexers{})
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, _ any) {
			if updates.Add(1) == events {
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
		fail("only %d of %d events arrived", updates.Load(), events)
	}
	seconds := time.Since(started).Seconds()
	close(stop)
	return map[string]any{
		"impl":              "client-go",
		"list_mode":         counter.listMode(),
		"events":            events,
		"seconds":           round3(seconds),
		"events_per_second": int64(float64(events)/seconds + 0.5),
	}
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }
func round1(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }

func main() {
	mode := flag.String("mode", "", "sync or events")
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "path to a kubeconfig")
	namespace := flag.String("namespace", "", "the namespace to cache")
	strip := flag.Bool("strip", false, "sync: drop managedFields before caching (as ours does)")
	since := flag.String("since", "", "events: the resourceVersion to replay from")
	events := flag.Int64("events", 5000, "events: how many updates to wait for")
	flag.StringVar(&contentType, "content-type", "", "json or protobuf (default: client-go's own)")
	flag.Parse()
	if *namespace == "" {
		fail("give the namespace to cache with -namespace")
	}
	var result map[string]any
	switch *mode {
	case "sync":
		result = measureSync(*kubeconfig, *namespace, *strip)
	case "events":
		if *since == "" {
			fail("-mode events needs the resourceVersion to replay from (-since)")
		}
		result = measureEvents(*kubeconfig, *namespace, *since, *events)
	default:
		fail("-mode must be sync or events, not %q", *mode)
	}
	result["go"] = runtime.Version()
	result["content_type"] = contentType
	if err := json.NewEncoder(os.Stdout).Encode(result); err != nil {
		fail("writing the result: %v", err)
	}
}
