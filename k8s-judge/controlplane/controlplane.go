// Package controlplane starts Kubernetes' own kube-apiserver (cmd/kube-apiserver/app/testing)
// on an embedded etcd (k8s.io/apiserver/pkg/storage/etcd3/testing) inside the test process, and
// writes a kubeconfig for the policy's hosts to read its Nodes.
package controlplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	etcd3testing "k8s.io/apiserver/pkg/storage/etcd3/testing"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
)

// ControlPlane is a running API server.
type ControlPlane struct {
	Config *rest.Config
	Client kubernetes.Interface
	// Kubeconfig is a kubeconfig file for the API server (the loopback client's identity).
	Kubeconfig string
}

// Start starts etcd and kube-apiserver; both stop with t.
func Start(t *testing.T) *ControlPlane {
	t.Helper()
	_, storage := etcd3testing.NewUnsecuredEtcd3TestClientServer(t)
	options := kubeapiservertesting.NewDefaultTestServerOptions()
	options.DisableInvariantChecks = true
	server := kubeapiservertesting.StartTestServerOrDie(t, options,
		[]string{"--disable-admission-plugins=ServiceAccount"}, storage)
	t.Cleanup(server.TearDownFn)
	client, err := kubernetes.NewForConfig(server.ClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := writeKubeconfig(server.ClientConfig, path); err != nil {
		t.Fatal(err)
	}
	return &ControlPlane{Config: server.ClientConfig, Client: client, Kubeconfig: path}
}

// writeKubeconfig writes config (server, CA, TLS server name, token) as a kubeconfig file.
func writeKubeconfig(config *rest.Config, path string) error {
	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["test"] = &clientcmdapi.Cluster{
		Server:                   config.Host,
		CertificateAuthorityData: config.TLSClientConfig.CAData,
		TLSServerName:            config.TLSClientConfig.ServerName,
	}
	kubeconfig.AuthInfos["test"] = &clientcmdapi.AuthInfo{Token: config.BearerToken}
	kubeconfig.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kubeconfig.CurrentContext = "test"
	if err := clientcmd.WriteToFile(*kubeconfig, path); err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	return os.Chmod(path, 0o600)
}

// ReplaceNodes makes the cluster's Nodes exactly nodes, as objects (their labels and taints; no
// status: what the policy reads of a Node is its labels): one DeleteCollection, one Create each.
func (c *ControlPlane) ReplaceNodes(ctx context.Context, nodes []v1.Node) error {
	if err := c.Client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("delete nodes: %w", err)
	}
	for _, node := range nodes {
		node.ResourceVersion, node.Status = "", v1.NodeStatus{}
		if _, err := c.Client.CoreV1().Nodes().Create(ctx, &node, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create node %s: %w", node.Name, err)
		}
	}
	return nil
}

// CreateNode creates node, sets its status (conditions, nodeInfo) as its kubelet would, then
// its taints as node's: the API server's TaintNodesByCondition admission taints a new Node
// not-ready, which the node lifecycle controller lifts once the Node reports Ready.
func (c *ControlPlane) CreateNode(ctx context.Context, node v1.Node) error {
	node.ResourceVersion = ""
	created, err := c.Client.CoreV1().Nodes().Create(ctx, &node, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create node %s: %w", node.Name, err)
	}
	created.Status = node.Status
	updated, err := c.Client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("node %s status: %w", node.Name, err)
	}
	updated.Spec.Taints = node.Spec.Taints
	if _, err := c.Client.CoreV1().Nodes().Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("node %s taints: %w", node.Name, err)
	}
	return nil
}

// WebhookFailures is how many calls of the webhook name the API server failed (its metrics):
// failed open (failurePolicy Ignore: the object went on without the webhook's answer:
// apiserver_admission_webhook_fail_open_count) or refused for the call's error (failurePolicy
// Fail: apiserver_admission_webhook_rejection_count with an error_type other than no_error). A
// timeout, a connection refused, an HTTP error status and an answer that is not an
// AdmissionReview all count; whatever serves the webhook.
func (c *ControlPlane) WebhookFailures(ctx context.Context, name string) (int, error) {
	data, err := c.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("the API server's metrics: %w", err)
	}
	total := 0
	for _, line := range strings.Split(string(data), "\n") {
		open := strings.HasPrefix(line, "apiserver_admission_webhook_fail_open_count{")
		rejected := strings.HasPrefix(line, "apiserver_admission_webhook_rejection_count{") && !strings.Contains(line, `error_type="no_error"`)
		if !(open || rejected) || !strings.Contains(line, `name="`+name+`"`) {
			continue
		}
		value, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("the API server's metrics: %q: %w", line, err)
		}
		total += int(value)
	}
	return total, nil
}
