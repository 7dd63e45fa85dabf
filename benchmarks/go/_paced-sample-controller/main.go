// Command sample-controller-paced is k8s.io/sample-controller with its
// clients' pacing as flags, so benchmarks/controller_bench.py can run it at
// another QPS than client-go's default, as it runs the course's program.
//
//	sample-controller-paced -kubeconfig PATH [-namespace NS] [-kube-api-qps 50] [-kube-api-burst 10]
//
// The controller itself is upstream's: this file is not built where it lies
// (the leading "_" keeps the go command away from the folder).
// helpers/cluster/gobuild.py copies it into a staging copy of the benchmarks
// module, beside sample-controller's own controller.go, unchanged, from the
// module cache at the version go.mod pins, and builds the two as one package
// main. This file takes the place of sample-controller's main.go and does
// what that does (clients from the kubeconfig, informer factories with a
// 30-second resync, NewController, Run with 2 workers).
//
// The difference is the pacing. Left at 0, as sample-controller leaves them,
// QPS and Burst give every API group's REST client a token bucket of its own
// at client-go's defaults (rest.DefaultQPS, rest.DefaultBurst): core/v1 for
// Events, apps/v1 for Deployments, samplecontroller.k8s.io for Foos. The
// course's program paces per API group too, at any QPS. client-go does not:
// once QPS is set, kubernetes.NewForConfigAndClient gives one bucket to all
// the groups of a clientset, so Events and Deployments would share one. With
// -kube-api-qps set, this program therefore builds the core/v1 and apps/v1
// clients with a bucket each (perGroupClientset), so both controllers still
// pace the same way; a -kube-api-burst left at 0 is client-go's default.
//
// -namespace limits its informers to one namespace, as the course's program
// does with --namespace (sample-controller's main.go watches every namespace;
// informers.WithNamespace is client-go's option for this), so it caches only
// the Foos and Deployments of the run it is timed on.
//
// It logs "Client pacing" with the QPS its REST clients' limiters were
// given, read back from them, so the caller records what ran.
package main

import (
	"flag"
	"fmt"
	"time"

	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	typedappsv1 "k8s.io/client-go/kubernetes/typed/apps/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	clientset "k8s.io/sample-controller/pkg/generated/clientset/versioned"
	informers "k8s.io/sample-controller/pkg/generated/informers/externalversions"
	"k8s.io/sample-controller/pkg/signals"
)

// resync is the informer factories' resync period in sample-controller's main.go.
const resync = 30 * time.Second

// perGroupClientset is the kubernetes clientset with a token bucket for each
// of the API groups sample-controller uses (core/v1, apps/v1), as client-go
// gives them when QPS is left at its default.
type perGroupClientset struct {
	*kubernetes.Clientset
	coreV1 typedcorev1.CoreV1Interface
	appsV1 typedappsv1.AppsV1Interface
}

func (c *perGroupClientset) CoreV1() typedcorev1.CoreV1Interface { return c.coreV1 }
func (c *perGroupClientset) AppsV1() typedappsv1.AppsV1Interface { return c.appsV1 }

// newKubeClient is what sample-controller's main.go makes (kubernetes.NewForConfig)
// at the default pacing, and a perGroupClientset once QPS is set.
func newKubeClient(config *rest.Config) (kubernetes.Interface, error) {
	clientset, err := kubernetes.NewForConfig(config)
	if err != nil || config.QPS == 0 {
		return clientset, err
	}
	httpClient, err := rest.HTTPClientFor(config)
	if err != nil {
		return nil, err
	}
	// A group client made on its own, with no RateLimiter in its config, makes its own bucket.
	coreV1, err := typedcorev1.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, err
	}
	appsV1, err := typedappsv1.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, err
	}
	return &perGroupClientset{Clientset: clientset, coreV1: coreV1, appsV1: appsV1}, nil
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "path to a kubeconfig")
	qps := flag.Float64("kube-api-qps", 0, "requests a second, per REST client (0: client-go's default)")
	burst := flag.Int("kube-api-burst", 0, "requests at once above it, per REST client (0: client-go's default)")
	namespace := flag.String("namespace", "", "the one namespace to watch (empty: every namespace)")
	klog.InitFlags(nil)
	flag.Parse()

	ctx := signals.SetupSignalHandler()
	logger := klog.FromContext(ctx)
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		logger.Error(err, "Error building kubeconfig")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	config.QPS, config.Burst = float32(*qps), *burst
	if config.QPS > 0 && config.Burst == 0 {
		config.Burst = rest.DefaultBurst // client-go refuses a QPS without a burst
	}

	kubeClient, err := newKubeClient(config)
	if err != nil {
		logger.Error(err, "Error building kubernetes clientset")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	fooClient, err := clientset.NewForConfig(config)
	if err != nil {
		logger.Error(err, "Error building the Foo clientset")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	logPacing(logger, config, kubeClient, fooClient)

	kubeFactory := kubeinformers.NewSharedInformerFactoryWithOptions(kubeClient, resync,
		kubeinformers.WithNamespace(*namespace))
	fooFactory := informers.NewSharedInformerFactoryWithOptions(fooClient, resync,
		informers.WithNamespace(*namespace))
	controller := NewController(ctx, kubeClient, fooClient,
		kubeFactory.Apps().V1().Deployments(),
		fooFactory.Samplecontroller().V1alpha1().Foos())
	kubeFactory.Start(ctx.Done())
	fooFactory.Start(ctx.Done())
	if err := controller.Run(ctx, 2); err != nil {
		logger.Error(err, "Error running controller")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
}

// logPacing logs the QPS of each API group's token bucket, read back from the
// clients, and fails if two groups share one.
func logPacing(logger klog.Logger, config *rest.Config, kube kubernetes.Interface, foos clientset.Interface) {
	limiters := map[string]flowcontrol.RateLimiter{
		"core/v1":                          kube.CoreV1().RESTClient().GetRateLimiter(),
		"apps/v1":                          kube.AppsV1().RESTClient().GetRateLimiter(),
		"samplecontroller.k8s.io/v1alpha1": foos.SamplecontrollerV1alpha1().RESTClient().GetRateLimiter(),
	}
	seen := map[flowcontrol.RateLimiter]string{}
	qps := limiters["apps/v1"].QPS()
	for group, limiter := range limiters {
		if other, shared := seen[limiter]; shared {
			logger.Error(fmt.Errorf("%s and %s share one token bucket", group, other), "Pacing is not per API group")
			klog.FlushAndExit(klog.ExitFlushTimeout, 1)
		}
		seen[limiter] = group
		if limiter.QPS() != qps {
			logger.Error(fmt.Errorf("%s has QPS %g, apps/v1 %g", group, limiter.QPS(), qps), "Uneven pacing")
			klog.FlushAndExit(klog.ExitFlushTimeout, 1)
		}
	}
	burst := config.Burst
	if burst == 0 {
		burst = rest.DefaultBurst // what rest.RESTClientFor gives a client left at 0
	}
	logger.Info("Client pacing", "qps", qps, "burst", burst, "perAPIGroup", len(seen))
}
