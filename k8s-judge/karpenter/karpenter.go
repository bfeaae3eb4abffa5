// Package karpenter runs Karpenter's own code (sigs.k8s.io/karpenter, with its kwok cloud
// provider) against the harness's control plane: its CRDs installed in the API server, NodePools
// and a KWOKNodeClass created through the API, and its provisioner called in the test process
// (no operator: operator.NewOperator parses the process's flags). Karpenter's readiness
// controllers do not run: a NodePool's status conditions are set here; and no kubelet runs: a
// Node the kwok provider creates for a NodeClaim is registered here, as Karpenter's registration
// controller and a kubelet would register it.
package karpenter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/awslabs/operatorpkg/status"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	kubeletapis "k8s.io/kubelet/pkg/apis"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kwokapis "sigs.k8s.io/karpenter/kwok/apis"
	kwokv1alpha1 "sigs.k8s.io/karpenter/kwok/apis/v1alpha1"
	kwok "sigs.k8s.io/karpenter/kwok/cloudprovider"
	kwokoptions "sigs.k8s.io/karpenter/kwok/options"
	"sigs.k8s.io/karpenter/pkg/apis"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/controllers/dynamicresources/deviceallocation"
	"sigs.k8s.io/karpenter/pkg/controllers/provisioning"
	"sigs.k8s.io/karpenter/pkg/controllers/provisioning/scheduling"
	"sigs.k8s.io/karpenter/pkg/controllers/state"
	"sigs.k8s.io/karpenter/pkg/events"
	"sigs.k8s.io/karpenter/pkg/operator/options"
	karpscheduling "sigs.k8s.io/karpenter/pkg/scheduling"
	"sigs.k8s.io/karpenter/pkg/state/virtualpods"
	"sigs.k8s.io/karpenter/pkg/test"
)

// NodeClass is the name of the KWOKNodeClass every NodePool of the harness refers to.
const NodeClass = "default"

// Context is ctx with the options Karpenter's code reads from it: the operator's (their test
// defaults, pkg/test) and the kwok provider's.
func Context(ctx context.Context) context.Context {
	ctx = options.ToContext(ctx, test.Options())
	return kwokoptions.ToContext(ctx, &kwokoptions.Options{})
}

// InstanceTypes are the kwok provider's instance types (amd64 and arm64, Linux and Windows).
func InstanceTypes(ctx context.Context) ([]*cloudprovider.InstanceType, error) {
	return kwok.ConstructInstanceTypes(Context(ctx))
}

// InstallCRDs creates Karpenter's CRDs (NodePool, NodeClaim, ...) and the kwok provider's
// (KWOKNodeClass) in the API server of config, and waits until each is Established.
func InstallCRDs(ctx context.Context, config *rest.Config) error {
	clientset, err := apiextensionsclient.NewForConfig(config)
	if err != nil {
		return err
	}
	crds := append(slices.Clone(apis.CRDs), kwokapis.CRDs...)
	for _, crd := range crds {
		crd = crd.DeepCopy()
		crd.ResourceVersion = ""
		if _, err := clientset.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range crds {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := clientset.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			for _, condition := range got.Status.Conditions {
				if condition.Type == apiextensionsv1.Established && condition.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established: %w", crd.Name, err)
		}
	}
	return nil
}

// Client is a controller-runtime client of config for Karpenter's types and the core ones,
// speaking JSON (the API server serves custom resources in JSON, not protobuf).
func Client(config *rest.Config) (client.Client, error) {
	config = rest.CopyConfig(config)
	config.ContentType, config.AcceptContentTypes = "application/json", "application/json"
	return client.New(config, client.Options{Scheme: scheme.Scheme})
}

// Env is Karpenter's provisioner on a control plane.
type Env struct {
	Client        client.Client
	Cloud         *kwok.CloudProvider
	Cluster       *state.Cluster
	kubelet       *kubelet
	Provisioner   *provisioning.Provisioner
	InstanceTypes []*cloudprovider.InstanceType
	ctx           context.Context
}

// New makes Karpenter's provisioner (provisioning.NewProvisioner, the kwok cloud provider, an
// empty cluster state) for the control plane of config, whose CRDs are installed, and creates the
// KWOKNodeClass NodePools refer to.
func New(ctx context.Context, config *rest.Config) (*Env, error) {
	// Karpenter logs through controller-runtime's logger: not printed.
	log.SetLogger(logr.Discard())
	ctx = Context(ctx)
	c, err := Client(config)
	if err != nil {
		return nil, err
	}
	its, err := kwok.ConstructInstanceTypes(ctx)
	if err != nil {
		return nil, err
	}
	clk := clock.RealClock{}
	kl := &kubelet{Client: c, claims: map[string]launch{}}
	cloud := kwok.NewCloudProvider(ctx, kl, its)
	cluster := state.NewCluster(clk, c, cloud)
	prov := provisioning.NewProvisioner(c, events.NewRecorder(&record.FakeRecorder{}), cloud, cluster, clk,
		deviceallocation.NewController(c), virtualpods.NewVirtualPodCache(c))
	// The API server may serve the CRD a moment before its discovery lists the group ("no
	// matches for karpenter.kwok.sh/v1alpha1"): retried briefly.
	var created error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		class := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: NodeClass}}
		created = c.Create(ctx, class)
		return created == nil || apierrors.IsAlreadyExists(created), nil
	})
	if err != nil {
		return nil, fmt.Errorf("KWOKNodeClass: %w (last error: %v)", err, created)
	}
	return &Env{Client: c, Cloud: cloud, Cluster: cluster, Provisioner: prov, InstanceTypes: its, kubelet: kl, ctx: ctx}, nil
}

// kubelet is the client the kwok provider creates its Nodes through. No kubelet runs here, so
// the Node is created as a kubelet registers it under Karpenter: with beta.kubernetes.io/os and
// beta.kubernetes.io/arch beside the stable labels the kwok provider copies from the NodeClaim
// (the kubelet's initialNode, pkg/kubelet/kubelet_node_status.go), and with its NodeClaim's
// taints and startup taints beside Karpenter's unregistered taint (the kubelet's
// --register-with-taints), and a Windows Node with node.kubernetes.io/windows-build, which a
// Windows kubelet always sets (getOSSpecificLabels, kubelet_node_status_windows.go): the build
// its NodeClaim's requirements admit, as a provider honouring them boots (windowsBuild). The
// scheduler sees a Node from its creation: created without them, a
// Pod tolerating every taint was bound through beta.kubernetes.io/arch DoesNotExist to a Node
// that runs none of its images before register labelled it (CI's
// K8S_E2E_SEED=10010806049364187041, now and then); never labelled, an over-refusal was judged
// from such a Node (K8S_E2E_SEED=2311737224396494042).
type kubelet struct {
	client.Client
	mu sync.Mutex
	// claims are the NodeClaims being launched, by name.
	claims map[string]launch
	// err is the last error of a Node's creation (the kwok provider only logs it).
	err error
}

// Create creates obj; a Node of the kwok provider's as its kubelet registers it. The kwok
// provider retries a failed creation with the same Node: the taints are added once.
func (k *kubelet) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	err := k.create(ctx, obj, opts...)
	if err != nil {
		k.mu.Lock()
		k.err = fmt.Errorf("creating %s: %w", obj.GetName(), err)
		k.mu.Unlock()
	}
	return err
}

func (k *kubelet) create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if node, ok := obj.(*corev1.Node); ok && IsKwok(node) {
		claim, err := k.claim(node.Name)
		if err != nil {
			return err
		}
		node.Labels[kubeletapis.LabelOS] = node.Labels[corev1.LabelOSStable]
		node.Labels[kubeletapis.LabelArch] = node.Labels[corev1.LabelArchStable]
		if node.Labels[corev1.LabelOSStable] == string(corev1.Windows) && node.Labels[corev1.LabelWindowsBuild] == "" {
			node.Labels[corev1.LabelWindowsBuild] = claim.build
		}
		for _, taint := range claim.taints {
			if !slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&taint) }) {
				node.Spec.Taints = append(node.Spec.Taints, taint)
			}
		}
	}
	return k.Client.Create(ctx, obj, opts...)
}

// launch is what the kubelet of a NodeClaim's Node registers: the NodeClaim's taints and
// startup taints, and the Windows build it boots.
type launch struct {
	taints []corev1.Taint
	build  string
}

// launching records claim's launch until done: the kwok provider names its Node
// "kwok-<NodeClaim>-...".
func (k *kubelet) launching(claim *karpv1.NodeClaim) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.claims[claim.Name] = launch{taints: registeredTaints(claim), build: windowsBuild(claim)}
	k.err = nil
}

// DefaultWindowsBuild is the build of the Windows Nodes Karpenter launches where their NodeClaim
// names none (Windows Server 2022, as the cluster test's Windows Nodes).
const DefaultWindowsBuild = "10.0.20348"

// windowsBuild is the Windows build claim's Node boots: DefaultWindowsBuild where claim's
// requirements admit it, else the first build they admit (of an In, else of windowsBuilds). The kwok provider boots no OS; a
// provider that does (AWS's, by the AMI family) boots one the NodeClaim's requirements admit,
// Karpenter's contract with it (a node.kubernetes.io/windows-build In of several values is
// not a label the kwok provider copies).
func windowsBuild(claim *karpv1.NodeClaim) string {
	requirements := karpscheduling.NewNodeSelectorRequirementsWithMinValues(claim.Spec.Requirements...)
	build := requirements.Get(corev1.LabelWindowsBuild)
	if build.Has(DefaultWindowsBuild) {
		return DefaultWindowsBuild
	}
	// Values are those an In admits (a NotIn's are those it excludes).
	if values := build.Values(); build.Operator() == corev1.NodeSelectorOpIn && len(values) > 0 {
		slices.Sort(values)
		return values[0]
	}
	for _, known := range windowsBuilds {
		if build.Has(known) {
			return known
		}
	}
	return DefaultWindowsBuild
}

// windowsBuilds are the Windows Server builds of the catalog's images (2019, 2022, 2025).
var windowsBuilds = []string{"10.0.17763", "10.0.20348", "10.0.26100"}

func (k *kubelet) done(claim string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.claims, claim)
}

// lastError is the last error of a Node's creation since the last launch, if any.
func (k *kubelet) lastError() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

// registeredTaints are the taints claim's Node keeps once registered (its taints and startup
// taints: Karpenter's registration controller, syncNode, merges both).
func registeredTaints(claim *karpv1.NodeClaim) []corev1.Taint {
	taints := slices.Clone(claim.Spec.Taints)
	for _, taint := range claim.Spec.StartupTaints {
		if !slices.ContainsFunc(taints, func(t corev1.Taint) bool { return t.MatchTaint(&taint) }) {
			taints = append(taints, taint)
		}
	}
	return taints
}

func (k *kubelet) claim(node string) (launch, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for name, claim := range k.claims {
		if strings.HasPrefix(node, "kwok-"+name+"-") {
			return launch{taints: slices.Clone(claim.taints), build: claim.build}, nil
		}
	}
	return launch{}, fmt.Errorf("the kwok provider creates Node %s for no NodeClaim being launched", node)
}

// Pool is a NodePool of the harness's: its template's requirements, labels and taints, whether
// its Ready condition is True, and static (spec.replicas).
type Pool struct {
	Name         string
	Requirements []corev1.NodeSelectorRequirement
	Labels       map[string]string
	Taints       []corev1.Taint
	NotReady     bool
	Replicas     *int64
	// Weight and Limits are spec.weight and spec.limits (which pool Karpenter tries first, and
	// how much it may launch): neither changes which platforms a pool can create.
	Weight *int32
	Limits corev1.ResourceList
	// ArchitectureMinValues: minValues of the requirements on kubernetes.io/arch (0: none).
	ArchitectureMinValues int
}

// NodePool is p as a karpenter.sh/v1 NodePool of the KWOKNodeClass.
func (p Pool) NodePool() *karpv1.NodePool {
	requirements := make([]karpv1.NodeSelectorRequirementWithMinValues, 0, len(p.Requirements))
	for _, r := range p.Requirements {
		requirement := karpv1.NodeSelectorRequirementWithMinValues{Key: r.Key, Operator: r.Operator, Values: r.Values}
		if r.Key == corev1.LabelArchStable && p.ArchitectureMinValues > 0 {
			requirement.MinValues = &p.ArchitectureMinValues
		}
		requirements = append(requirements, requirement)
	}
	return &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name},
		Spec: karpv1.NodePoolSpec{
			Replicas: p.Replicas,
			Weight:   p.Weight,
			Limits:   karpv1.Limits(p.Limits),
			Template: karpv1.NodeClaimTemplate{
				ObjectMeta: karpv1.ObjectMeta{Labels: p.Labels},
				Spec: karpv1.NodeClaimTemplateSpec{
					Requirements: requirements,
					Taints:       p.Taints,
					NodeClassRef: &karpv1.NodeClassReference{Group: kwokapis.Group, Kind: "KWOKNodeClass", Name: NodeClass},
				},
			},
		},
	}
}

// CreatePool creates p and sets its status as Karpenter's NodePool readiness and validation
// controllers would (ValidationSucceeded, NodeClassReady: Ready True), or Ready False for a
// pool that is not Ready.
func CreatePool(ctx context.Context, c client.Client, p Pool) error {
	pool := p.NodePool()
	if err := c.Create(ctx, pool); err != nil {
		return fmt.Errorf("NodePool %s: %w", p.Name, err)
	}
	p.setStatus(pool)
	if err := c.Status().Update(ctx, pool); err != nil {
		return fmt.Errorf("NodePool %s status: %w", p.Name, err)
	}
	return nil
}

// setStatus sets pool's status conditions as Karpenter's NodePool readiness and validation
// controllers would for p.
func (p Pool) setStatus(pool *karpv1.NodePool) {
	conditions := pool.StatusConditions()
	conditions.SetTrue(karpv1.ConditionTypeValidationSucceeded)
	if p.NotReady {
		conditions.SetFalse(karpv1.ConditionTypeNodeClassReady, "NodeClassNotReady", "the harness's pool that is not Ready")
	} else {
		conditions.SetTrue(karpv1.ConditionTypeNodeClassReady)
	}
}

// Counts says whether Karpenter's provisioner schedules onto p once created (Counted, on the
// NodePool with the status CreatePool gives it).
func (p Pool) Counts() bool {
	pool := p.NodePool()
	p.setStatus(pool)
	return Counted(pool)
}

// ReplacePools makes the cluster's NodePools exactly pools.
func ReplacePools(ctx context.Context, c client.Client, pools []Pool) error {
	if err := c.DeleteAllOf(ctx, &karpv1.NodePool{}); err != nil {
		return fmt.Errorf("delete NodePools: %w", err)
	}
	// DeleteAllOf returns before the objects are gone when they carry finalizers; ours have none.
	for _, p := range pools {
		if err := CreatePool(ctx, c, p); err != nil {
			return err
		}
	}
	return nil
}

// Counted says whether Karpenter's provisioner schedules onto pool: Provisioner.NewScheduler's
// filter (not static, Ready condition True, not being deleted).
func Counted(pool *karpv1.NodePool) bool {
	return pool.Spec.Replicas == nil && pool.StatusConditions().IsTrue(status.ConditionReady) && pool.DeletionTimestamp.IsZero()
}

// Serves runs Karpenter's scheduling simulation for pod alone against the cluster's NodePools
// and no existing Node (Provisioner.NewScheduler, Scheduler.Solve: the Pod's required terms
// relaxed one at a time, its preferences, its tolerations against each pool's taints, the kwok
// instance types): the NodeClaims it would create for it (none when no pool serves it), and the
// error it gives the Pod. Without the existing Nodes it says what the pools can serve: with them,
// Karpenter puts a Pod on a Node it admits (whatever its images run on) and launches nothing.
// The scheduler's simulation reads no matchFields (the provisioner ignores a Pod with any: Places);
// its callers decide what a term naming a Node means.
func (e *Env) Serves(pod *corev1.Pod) ([]*scheduling.NodeClaim, error) {
	claims, _, err := e.solve(pod, nil)
	return claims, err
}

// Places is what Karpenter's provisioner (Provisioner.Schedule) does with pod, a Pending Pod it
// would list (GetProvisionablePods: marked unschedulable, nominated nowhere, no DaemonSet's: its
// callers' to ensure): it ignores a Pod Validate refuses, as an Ignored error; else
// Scheduler.Solve for pod alone (Schedule solves every Pending Pod at once) with the cluster's
// existing Nodes as its state has them (SyncState first), those not being deleted, and Schedule's
// options. It returns the NodeClaims it would create for pod, the Nodes it puts pod on, and the
// Pod's error.
func (e *Env) Places(pod *corev1.Pod) ([]*scheduling.NodeClaim, []*corev1.Node, error) {
	if err := e.Validate(pod); err != nil {
		return nil, nil, err
	}
	o := options.FromContext(e.ctx)
	opts := []scheduling.Options{
		scheduling.DisableReservedCapacityFallback,
		scheduling.NumConcurrentReconciles(int(math.Ceil(float64(o.CPURequests) / 1000.0))),
		scheduling.MinValuesPolicy(o.MinValuesPolicy),
	}
	if o.PreferencePolicy == options.PreferencePolicyIgnore {
		opts = append(opts, scheduling.IgnorePreferences)
	}
	return e.solve(pod, e.Cluster.DeepCopyNodes().Active(), opts...)
}

// Validate is Provisioner.Validate, as GetPendingPods calls it: its refusal of pod (a term with
// matchFields, for one) as an Ignored error; an API or context error as it is.
func (e *Env) Validate(pod *corev1.Pod) error {
	err := e.Provisioner.Validate(e.ctx, pod)
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		apierrors.ReasonForError(err) != metav1.StatusReasonUnknown {
		return err
	}
	return Ignored{err}
}

// Ignored is Provisioner.Validate's error for a Pod Karpenter's provisioner does not schedule.
type Ignored struct{ Err error }

func (e Ignored) Error() string { return "ignored by Karpenter's provisioner: " + e.Err.Error() }
func (e Ignored) Unwrap() error { return e.Err }

// PodError is the error Karpenter's scheduler gives a Pod it finds no Node nor NodePool for, as
// opposed to a failure of the simulation.
type PodError struct{ Err error }

func (e PodError) Error() string { return e.Err.Error() }
func (e PodError) Unwrap() error { return e.Err }

// IsPodError says whether err is the Pod's (PodError, Ignored), or that no NodePool counts.
func IsPodError(err error) bool {
	return errors.As(err, &PodError{}) || errors.As(err, &Ignored{}) || errors.Is(err, provisioning.ErrNodePoolsNotFound)
}

// solve is Scheduler.Solve for pod alone with the existing Nodes nodes and opts: the NodeClaims
// it creates, the Nodes it puts pod on, and the Pod's error.
func (e *Env) solve(pod *corev1.Pod, nodes []*state.StateNode, opts ...scheduling.Options) ([]*scheduling.NodeClaim, []*corev1.Node, error) {
	ctx := e.ctx
	pod = pod.DeepCopy()
	if pod.UID == "" {
		pod.UID = "judged"
	}
	if pod.Namespace == "" {
		pod.Namespace = "default"
	}
	s, err := e.Provisioner.NewScheduler(ctx, []*corev1.Pod{pod}, nodes, nil, opts...)
	if errors.Is(err, provisioning.ErrNodePoolsNotFound) {
		return nil, nil, err
	}
	if err != nil {
		return nil, nil, fmt.Errorf("karpenter's scheduler: %w", err)
	}
	results, err := s.Solve(ctx, []*corev1.Pod{pod})
	if err != nil {
		return nil, nil, fmt.Errorf("karpenter's scheduler: %w", err)
	}
	for _, podErr := range results.PodErrors {
		return nil, nil, PodError{podErr}
	}
	var placed []*corev1.Node
	for _, existing := range results.ExistingNodes {
		if len(existing.Pods) > 0 && existing.Node != nil {
			placed = append(placed, existing.Node)
		}
	}
	return results.NewNodeClaims, placed, nil
}

// Launched is a Node the kwok provider created for a NodeClaim, registered.
type Launched struct {
	NodeClaim string
	NodePool  string
	Node      *corev1.Node
	// Pods are the namespace/name of the Pods Karpenter launched it for.
	Pods []string
}

// Provision is one pass of Karpenter's provisioner: Provisioner.Schedule over the Pods the
// scheduler marked unschedulable (its NodeClaims), Provisioner.CreateNodeClaims (the NodeClaim
// objects), the kwok provider's Create for each (the launch: it creates the Node through
// kubelet, labelled and tainted as a kubelet registers it, tainted unregistered too), and the
// registration: each Node made Ready as its kubelet and Karpenter's registration controller
// would (the unregistered taint removed, Ready condition, nodeInfo). It returns the Nodes launched and the Pods' errors.
func (e *Env) Provision() ([]Launched, map[*corev1.Pod]error, error) {
	ctx := e.ctx
	results, err := e.Provisioner.Schedule(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("schedule: %w", err)
	}
	if len(results.NewNodeClaims) == 0 {
		return nil, results.PodErrors, nil
	}
	names, err := e.Provisioner.CreateNodeClaims(ctx, results.NewNodeClaims)
	if err != nil {
		return nil, nil, fmt.Errorf("create NodeClaims: %w", err)
	}
	var launched []Launched
	for i, name := range names {
		if name == "" {
			continue
		}
		claim := &karpv1.NodeClaim{}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: name}, claim); err != nil {
			return nil, nil, fmt.Errorf("NodeClaim %s: %w", name, err)
		}
		e.kubelet.launching(claim)
		created, err := e.Cloud.Create(ctx, claim)
		if err != nil {
			e.kubelet.done(name)
			return nil, nil, fmt.Errorf("launch NodeClaim %s: %w", name, err)
		}
		node, err := e.register(ctx, claim, created.Status.NodeName)
		e.kubelet.done(name)
		if err != nil {
			return nil, nil, err
		}
		var pods []string
		for _, pod := range results.NewNodeClaims[i].Pods {
			pods = append(pods, pod.Namespace+"/"+pod.Name)
		}
		launched = append(launched, Launched{NodeClaim: name, NodePool: claim.Labels[karpv1.NodePoolLabelKey], Node: node, Pods: pods})
	}
	return launched, results.PodErrors, nil
}

// register waits for the Node the kwok provider creates (asynchronously, through kubelet: with
// its kubelet labels and taints) and makes it Ready: status (Ready, nodeInfo, as a kubelet
// reports it), then taints: the NodeClaim's (registeredTaints), without the unregistered taint
// (Karpenter's registration controller) and the not-ready one (the node lifecycle controller,
// once Ready).
func (e *Env) register(ctx context.Context, claim *karpv1.NodeClaim, name string) (*corev1.Node, error) {
	node := &corev1.Node{}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return e.Client.Get(ctx, client.ObjectKey{Name: name}, node) == nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("the kwok provider created no Node %s for NodeClaim %s: %w (last creation error: %v)", name, claim.Name, err, e.kubelet.lastError())
	}
	now := metav1.Now()
	node.Status.Phase = corev1.NodeRunning
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: now, LastTransitionTime: now}}
	node.Status.NodeInfo.Architecture = node.Labels[corev1.LabelArchStable]
	node.Status.NodeInfo.OperatingSystem = node.Labels[corev1.LabelOSStable]
	if err := e.Client.Status().Update(ctx, node); err != nil {
		return nil, fmt.Errorf("Node %s status: %w", name, err)
	}
	taints := registeredTaints(claim)
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := e.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
			return false, err
		}
		node.Spec.Taints = taints
		node.Labels[karpv1.NodeRegisteredLabelKey] = "true"
		if err := e.Client.Update(ctx, node); err != nil {
			if apierrors.IsConflict(err) {
				return false, nil
			}
			return false, err
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("Node %s taints: %w", name, err)
	}
	return node, nil
}

// Platform is a node's "os/arch".
func Platform(labels map[string]string) string {
	return labels[corev1.LabelOSStable] + "/" + labels[corev1.LabelArchStable]
}

// IsKwok says whether node was created by the kwok provider.
func IsKwok(node *corev1.Node) bool { return strings.HasPrefix(node.Spec.ProviderID, "kwok://") }

// Terms are pod, once with each of its required node affinity terms alone (Karpenter's
// scheduler relaxes the terms one at a time, the first that works winning: each is what it may
// schedule the Pod by), or pod itself when it has at most one.
func Terms(pod *corev1.Pod) []*corev1.Pod {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil ||
		len(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) <= 1 {
		return []*corev1.Pod{pod}
	}
	var out []*corev1.Pod
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		one := pod.DeepCopy()
		one.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = []corev1.NodeSelectorTerm{term}
		out = append(out, one)
	}
	return out
}

// Platforms are the platforms ("os/arch") of the Nodes Karpenter's scheduling simulation would
// launch for pod from the cluster's NodePools (Serves, each required term alone: Terms), each
// with a NodePool that would launch it: the instance types of each NodeClaim it makes. A pod
// with matchFields (a Node's name) is simulated without them (Karpenter reads matchExpressions
// only): its caller decides.
func (e *Env) Platforms(pod *corev1.Pod) (map[string]string, error) {
	platforms := map[string]string{}
	for _, one := range Terms(pod) {
		claims, err := e.Serves(one)
		if errors.Is(err, provisioning.ErrNodePoolsNotFound) {
			return platforms, nil
		}
		if errors.As(err, &PodError{}) {
			// No pool serves it by this term.
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, claim := range claims {
			for _, it := range claim.InstanceTypeOptions {
				for _, os := range it.Requirements.Get(corev1.LabelOSStable).Values() {
					for _, arch := range it.Requirements.Get(corev1.LabelArchStable).Values() {
						if _, seen := platforms[os+"/"+arch]; !seen {
							platforms[os+"/"+arch] = claim.NodePoolName
						}
					}
				}
			}
		}
	}
	return platforms, nil
}

// SyncState gives Karpenter's cluster state what its informer controllers would: every Node,
// NodeClaim and Pod of the API server.
func (e *Env) SyncState() error {
	ctx := e.ctx
	claims := &karpv1.NodeClaimList{}
	if err := e.Client.List(ctx, claims); err != nil {
		return err
	}
	for i := range claims.Items {
		e.Cluster.UpdateNodeClaim(&claims.Items[i])
	}
	nodes := &corev1.NodeList{}
	if err := e.Client.List(ctx, nodes); err != nil {
		return err
	}
	for i := range nodes.Items {
		if err := e.Cluster.UpdateNode(ctx, &nodes.Items[i]); err != nil {
			return err
		}
	}
	pods := &corev1.PodList{}
	if err := e.Client.List(ctx, pods); err != nil {
		return err
	}
	for i := range pods.Items {
		if err := e.Cluster.UpdatePod(ctx, &pods.Items[i]); err != nil {
			return err
		}
	}
	return nil
}
