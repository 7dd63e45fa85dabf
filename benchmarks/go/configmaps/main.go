// Command configmaps makes and updates the benchmarks' ConfigMaps, quickly.
//
//	configmaps -namespace NS -create 100000
//	configmaps -namespace NS -update 20000 -objects 100 -token r1
//	configmaps -namespace NS -delete
//
// -create N makes sure ConfigMaps cm-00000 ... cm-(N-1) exist in NS, making
// the missing ones, and says how many the namespace then holds ("objects",
// kube-root-ca.crt included). Each is the size of a typical small ConfigMap:
// two labels, an annotation and five short values.
//
// -update N makes N updates (JSON merge patches), the i-th to cm-(i mod M)
// for -objects M, setting data.round to "TOKEN-i". The last update is made
// alone, after all the others have finished, so it is the last one any watch
// delivers: a reader that sees it has seen them all. The output names it
// ("last_key", "last_value") and gives "since", the collection's
// resourceVersion before the first update, from which a watch replays them.
//
// -delete deletes every ConfigMap of NS named cm-NNNNN, side by side. The
// namespace controller would delete them too, but through one DeleteCollection,
// which the API server works through one object after the other
// (--delete-collection-workers is 1 by default).
//
// Each prints one JSON object on stdout. The work is spread over -workers
// goroutines, unthrottled (rest.Config QPS below zero: no client-side rate
// limit): the API server and etcd set the pace, not the client, and filling
// the namespaces takes as little of benchmarks/run_all's time as it can.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
)

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "configmaps: "+format+"\n", args...)
	os.Exit(1)
}

func name(i int) string { return fmt.Sprintf("cm-%05d", i) }

func configMap(name string) *corev1.ConfigMap {
	data := map[string]string{}
	for i := 0; i < 5; i++ {
		data[fmt.Sprintf("key%d", i)] = fmt.Sprintf("value-%d-", i) + strings.Repeat("x", 24)
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{"app": "bench", "tier": "backend"},
			Annotations: map[string]string{"example.com/owner": "team-bench"},
		},
		Data: data,
	}
}

// inParallel runs work(i) for i in [0, n) on `workers` goroutines; the first error wins.
func inParallel(n, workers int, work func(int) error) error {
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := work(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var first error
feed:
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case first = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	if first == nil {
		select {
		case first = <-errs:
		default:
		}
	}
	return first
}

func create(ctx context.Context, configMaps typedcorev1.ConfigMapInterface, count, workers int) map[string]any {
	started := time.Now()
	existing := names(ctx, configMaps)
	var missing []string
	for i := 0; i < count; i++ {
		if !existing[name(i)] {
			missing = append(missing, name(i))
		}
	}
	err := inParallel(len(missing), workers, func(i int) error {
		_, err := configMaps.Create(ctx, configMap(missing[i]), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	if err != nil {
		fail("creating the ConfigMaps: %v", err)
	}
	return map[string]any{
		"created": len(missing),
		"objects": len(names(ctx, configMaps)),
		"seconds": since(started),
	}
}

// names lists every ConfigMap of the namespace, by name.
func names(ctx context.Context, configMaps typedcorev1.ConfigMapInterface) map[string]bool {
	found := map[string]bool{}
	options := metav1.ListOptions{Limit: 500}
	for {
		page, err := configMaps.List(ctx, options)
		if err != nil {
			fail("listing the ConfigMaps: %v", err)
		}
		for _, item := range page.Items {
			found[item.Name] = true
		}
		if options.Continue = page.Continue; options.Continue == "" {
			return found
		}
	}
}

func update(ctx context.Context, configMaps typedcorev1.ConfigMapInterface, namespace string,
	updates, objects, workers int, token string) map[string]any {
	if updates < 1 || objects < 1 {
		fail("-update and -objects must be at least 1")
	}
	started := time.Now()
	listed, err := configMaps.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		fail("listing the ConfigMaps: %v", err)
	}
	patch := func(i int) error {
		value := fmt.Sprintf("%s-%d", token, i)
		body, _ := json.Marshal(map[string]any{"data": map[string]string{"round": value}})
		_, err := configMaps.Patch(ctx, name(i%objects), types.MergePatchType, body, metav1.PatchOptions{})
		return err
	}
	if err := inParallel(updates-1, workers, patch); err != nil {
		fail("updating the ConfigMaps: %v", err)
	}
	last := updates - 1
	if err := patch(last); err != nil {
		fail("updating the ConfigMaps: %v", err)
	}
	return map[string]any{
		"since":      listed.ResourceVersion,
		"updates":    updates,
		"last_key":   namespace + "/" + name(last%objects),
		"last_value": fmt.Sprintf("%s-%d", token, last),
		"seconds":    since(started),
	}
}

func remove(ctx context.Context, configMaps typedcorev1.ConfigMapInterface, workers int) map[string]any {
	started := time.Now()
	var doomed []string
	for name := range names(ctx, configMaps) {
		if len(name) == len("cm-00000") && strings.HasPrefix(name, "cm-") {
			doomed = append(doomed, name)
		}
	}
	err := inParallel(len(doomed), workers, func(i int) error {
		err := configMaps.Delete(ctx, doomed[i], metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	if err != nil {
		fail("deleting the ConfigMaps: %v", err)
	}
	return map[string]any{"deleted": len(doomed), "seconds": since(started)}
}

func since(started time.Time) float64 {
	return float64(time.Since(started).Milliseconds()) / 1000
}

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "path to a kubeconfig")
	namespace := flag.String("namespace", "", "where the ConfigMaps are")
	count := flag.Int("create", 0, "make sure cm-00000 ... cm-(N-1) exist")
	updates := flag.Int("update", 0, "make this many updates")
	objects := flag.Int("objects", 0, "-update: spread over cm-00000 ... cm-(M-1)")
	token := flag.String("token", "round", "-update: the prefix of each update's data.round")
	deleteAll := flag.Bool("delete", false, "delete every cm-NNNNN of the namespace")
	workers := flag.Int("workers", 32, "requests in flight at once")
	flag.Parse()
	chosen := 0
	for _, given := range []bool{*count > 0, *updates > 0, *deleteAll} {
		if given {
			chosen++
		}
	}
	if *namespace == "" || chosen != 1 {
		fail("give -namespace, and one of -create N, -update N -objects M, -delete")
	}
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fail("loading the kubeconfig %q: %v", *kubeconfig, err)
	}
	config.QPS = -1 // no client-side rate limit
	configMaps := kubernetes.NewForConfigOrDie(config).CoreV1().ConfigMaps(*namespace)
	ctx := context.Background()
	var result map[string]any
	switch {
	case *deleteAll:
		result = remove(ctx, configMaps, *workers)
	case *count > 0:
		result = create(ctx, configMaps, *count, *workers)
	default:
		result = update(ctx, configMaps, *namespace, *updates, *objects, *workers, *token)
	}
	result["namespace"] = *namespace
	if err := json.NewEncoder(os.Stdout).Encode(result); err != nil {
		fail("writing the result: %v", err)
	}
}
