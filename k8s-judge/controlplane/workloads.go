package controlplane

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/flowcontrol"

	"k8s.io/kubernetes/pkg/controller/cronjob"
	"k8s.io/kubernetes/pkg/controller/daemon"
	"k8s.io/kubernetes/pkg/controller/deployment"
	"k8s.io/kubernetes/pkg/controller/job"
	"k8s.io/kubernetes/pkg/controller/replicaset"
	"k8s.io/kubernetes/pkg/controller/statefulset"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/profile"
)

// StartScheduler runs kube-scheduler's scheduler (its default profile: the NodeAffinity and
// TaintToleration filters among the others) until ctx ends.
func (c *ControlPlane) StartScheduler(ctx context.Context) error {
	client := kubernetes.NewForConfigOrDie(c.Config)
	factory := scheduler.NewInformerFactory(client, 0, nil)
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	broadcaster.StartRecordingToSink(ctx.Done())
	go func() { <-ctx.Done(); broadcaster.Shutdown() }()
	sched, err := scheduler.New(ctx, client, factory, nil, profile.NewRecorderFactory(broadcaster),
		scheduler.WithKubeConfig(c.Config))
	if err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	if err := sched.WaitForHandlersSync(ctx); err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	go sched.Run(ctx)
	return nil
}

// StartControllers runs the controllers that turn workloads into Pods, as
// kube-controller-manager starts them: Deployments (and their ReplicaSets), StatefulSets, Jobs,
// CronJobs and DaemonSets, until ctx ends.
func (c *ControlPlane) StartControllers(ctx context.Context) error {
	client := kubernetes.NewForConfigOrDie(c.Config)
	factory := informers.NewSharedInformerFactory(client, 0)
	apps, core, batch := factory.Apps().V1(), factory.Core().V1(), factory.Batch().V1()
	deployments, err := deployment.NewDeploymentController(ctx, apps.Deployments(), apps.ReplicaSets(), core.Pods(), client)
	if err != nil {
		return fmt.Errorf("deployment controller: %w", err)
	}
	replicaSets := replicaset.NewReplicaSetController(ctx, apps.ReplicaSets(), core.Pods(), client, replicaset.BurstReplicas)
	statefulSets := statefulset.NewStatefulSetController(ctx, core.Pods(), apps.StatefulSets(),
		core.PersistentVolumeClaims(), apps.ControllerRevisions(), client)
	// The Workload and PodGroup informers serve the WorkloadWithJob feature, off by default (as
	// kube-controller-manager passes them).
	jobs, err := job.NewController(ctx, client, core.Pods(), batch.Jobs(), nil, nil)
	if err != nil {
		return fmt.Errorf("job controller: %w", err)
	}
	cronJobs, err := cronjob.NewControllerV2(ctx, batch.Jobs(), batch.CronJobs(), client)
	if err != nil {
		return fmt.Errorf("cronjob controller: %w", err)
	}
	daemonSets, err := daemon.NewDaemonSetsController(ctx, apps.DaemonSets(), apps.ControllerRevisions(), core.Pods(),
		core.Nodes(), client, flowcontrol.NewBackOff(time.Second, 15*time.Minute))
	if err != nil {
		return fmt.Errorf("daemonset controller: %w", err)
	}
	factory.Start(ctx.Done())
	go deployments.Run(ctx, 2)
	go replicaSets.Run(ctx, 2)
	go statefulSets.Run(ctx, 2)
	go jobs.Run(ctx, 2)
	go cronJobs.Run(ctx, 2)
	go daemonSets.Run(ctx, 2)
	return nil
}
