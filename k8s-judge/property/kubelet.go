package property

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KubeletStatus is pod's status as the kubelet of its Node would report it (no kubelet runs in
// the harness): each container whose image runs on the Node (runs: the catalog's word, Windows
// build included, since a process-isolated container of another build does not start) started,
// each such init container completed; the others waiting in CrashLoopBackOff after exec format
// error, and, behind an init container that never completes, the containers not started.
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
	out := pod.Status.DeepCopy()
	out.InitContainerStatuses, out.ContainerStatuses = nil, nil
	initialized := true
	for _, c := range pod.Spec.InitContainers {
		s := status(c, true)
		initialized = initialized && s.State.Terminated != nil
		out.InitContainerStatuses = append(out.InitContainerStatuses, s)
	}
	for _, c := range pod.Spec.Containers {
		s := status(c, false)
		if !initialized {
			s = v1.ContainerStatus{Name: c.Name, Image: c.Image, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "PodInitializing"}}}
		}
		out.ContainerStatuses = append(out.ContainerStatuses, s)
	}
	return *out
}

// startedImages are the images of pod's containers and init containers that its status says
// started, run or completed (exit code 0): images its Node has run.
func startedImages(pod *v1.Pod) []string {
	var images []string
	for _, s := range append(append([]v1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		completed := s.State.Terminated != nil && s.State.Terminated.ExitCode == 0
		if (s.Started != nil && *s.Started) || s.State.Running != nil || completed {
			images = append(images, s.Image)
		}
	}
	return images
}
