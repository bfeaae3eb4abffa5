package property

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KubeletStatus is pod's status as the kubelet of its Node would report it (no kubelet runs in
// the harness): each container whose image runs on the Node (runs: the catalog's word, Windows
// build included, since a process-isolated container of another build does not start) started,
// each such init container completed; the others waiting in CrashLoopBackOff after exec format
// error, and, behind an init container that never completes, the containers not started. An
// ephemeral container too.
func KubeletStatus(pod *v1.Pod, runs func(ref string) bool) v1.PodStatus {
	status := func(c v1.Container, init bool) v1.ContainerStatus {
		s := v1.ContainerStatus{Name: c.Name, Image: c.Image}
		switch {
		case !runs(c.Image):
			s.State.Waiting = &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
			s.LastTerminationState.Terminated = &v1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "exec format error"}
		case init:
			s.State.Terminated = &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}
		default:
			started := true
			s.Started, s.Ready = &started, true
			s.State.Running = &v1.ContainerStateRunning{StartedAt: metav1.Now()}
		}
		return s
	}
	// The kubelet runs init containers in order: none after one that never completes.
	initializing := func(c v1.Container) v1.ContainerStatus {
		return v1.ContainerStatus{Name: c.Name, Image: c.Image, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "PodInitializing"}}}
	}
	out := pod.Status.DeepCopy()
	out.InitContainerStatuses, out.ContainerStatuses, out.EphemeralContainerStatuses = nil, nil, nil
	initialized := true
	for _, c := range pod.Spec.InitContainers {
		s := initializing(c)
		if initialized {
			s = status(c, true)
			initialized = s.State.Terminated != nil
		}
		out.InitContainerStatuses = append(out.InitContainerStatuses, s)
	}
	for _, c := range pod.Spec.Containers {
		s := initializing(c)
		if initialized {
			s = status(c, false)
		}
		out.ContainerStatuses = append(out.ContainerStatuses, s)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		out.EphemeralContainerStatuses = append(out.EphemeralContainerStatuses, status(v1.Container(c.EphemeralContainerCommon), false))
	}
	return *out
}

// startedImages are the images of pod's containers, init containers and ephemeral containers
// whose status says their current run started, runs or completed (exit code 0): images its Node
// has run.
func startedImages(pod *v1.Pod) []string {
	var images []string
	statuses := append(append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...), pod.Status.EphemeralContainerStatuses...)
	for _, s := range statuses {
		completed := s.State.Terminated != nil && s.State.Terminated.ExitCode == 0
		if (s.Started != nil && *s.Started) || s.State.Running != nil || completed {
			images = append(images, s.Image)
		}
	}
	return images
}
