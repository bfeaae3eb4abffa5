package property

import (
	"strings"
	"testing"
)

// TestTallyMinimums: a run that judges little misses the minimums it does not reach, each named,
// and none it reaches: all refused (d. alone); b. and c. judged on the Nodes of the Pod's OS only
// (as a judge of b. blind to other OSes, and of c. blind to Pods of several OSes, would: a judge
// that skips the Nodes of another OS); no case judged by Karpenter's simulation of the NodePools;
// accepted cases whose tolerations and preferred terms are judged but never added nor kept;
// every check and outcome in its shares.
func TestTallyMinimums(t *testing.T) {
	refused := Verdict{Rejected: true, Judged: []string{checkMessage, checkD}, Skipped: []string{skipRejected}}
	for _, tc := range []struct {
		name string
		// verdicts are repeated in turn over 3*minimumCases cases.
		verdicts []Verdict
		missed   []string // parts of the misses wanted
		reached  []string // parts no miss may have
	}{
		{name: "all refused", verdicts: []Verdict{refused},
			missed: []string{"b. judged in 0 (0.0%)", "b. judged on Nodes of another OS in 0", "b. judged where the OS pin is needed in 0",
				"b. judged on the nodes the settings declare in 0", "b. judged where a node the settings declare admits in 0",
				"c. judged in 0", "c. judged on Nodes of another OS that ran the Pod in 0", "c. judged on a virtual-kubelet Node (readNodes) in 0",
				outcomePatched + " in 0", outcomeUnchanged + " in 0"},
			reached: []string{"d. judged", outcomeRejected}},
		{name: "b. on the Pod's OS only", verdicts: []Verdict{refused,
			{Patched: true, Judged: []string{checkD, checkB, checkBAdmitted, checkC, checkCNodes}},
			{Judged: []string{checkD, checkB, checkC}}},
			missed: []string{"b. judged on Nodes of another OS in 0", "b. judged where the OS pin is needed in 0",
				"c. judged on Nodes of another OS that ran the Pod in 0"},
			reached: []string{"b. judged in", "c. judged in", "d. judged", outcomeRejected, outcomePatched, outcomeUnchanged}},
		{name: "no NodePool judged by Karpenter", verdicts: []Verdict{refused,
			{Patched: true, Judged: []string{checkD, checkB, checkBOtherOS, checkBOSPin, checkC, checkCNodes, checkCOtherOS}},
			{Judged: []string{checkD, checkB, checkC}}},
			missed:  []string{"NodePools: d. judged by Karpenter's simulation (a NodePool serves the Pod) in 0", "NodePools: b. judged on the Nodes Karpenter's simulation launches in 0"},
			reached: []string{"b. judged in", "c. judged in", "d. judged in", outcomeRejected, outcomePatched, outcomeUnchanged}},
		{name: "no toleration nor preferred term added or kept", verdicts: []Verdict{refused,
			{Patched: true, Judged: []string{checkD, checkB, checkBOtherOS, checkBOSPin, checkC, checkCNodes, checkCOtherOS, checkDPools, checkBPools, checkTolerations, checkPreferences}},
			{Judged: []string{checkD, checkB, checkC, checkTolerations, checkPreferences}}},
			missed: []string{"tolerations judged on a patched Pod with its own in 0", "tolerations judged where the policy added some in 0",
				"preferred terms judged on a patched Pod with its own in 0", "preferred terms judged where the policy added some in 0"},
			reached: []string{"tolerations judged in", "preferred terms judged in", "b. judged in", "c. judged in", "d. judged in"}},
		{name: "no reference but by tag, no nested index", verdicts: []Verdict{refused,
			{Patched: true, Judged: []string{checkA, checkD, checkB, checkC}}, {Judged: []string{checkD, checkB, checkC}}},
			missed: []string{"references by digest judged in 0", "references through registryMirrors judged in 0",
				"references through a registryMirrors path prefix judged in 0",
				"Docker Hub short names judged in 0", "indexes that nest indexes judged in 0", "lookup failures judged in 0",
				"templates under validate judged in 0"},
			reached: []string{"a. judged", "b. judged in", "c. judged in", "d. judged in", "refusals' message judged"}},
		// One case in three decided by a lookup the time budget left out: above the maximum.
		{name: "lookups out of time", verdicts: []Verdict{refused,
			{Patched: true, Judged: checks},
			{Judged: []string{checkLookup}, Skipped: []string{skipBudget}}},
			missed:  []string{"lookups the time budget left out decided 1000 (33.3%) of the cases, above the maximum 1%"},
			reached: []string{"judged", outcomeRejected, outcomePatched, outcomeUnchanged}},
		{name: "every check", verdicts: []Verdict{refused,
			{Patched: true, Judged: checks},
			{Judged: []string{checkD, checkDByNodes, checkB, checkC, checkTolerations, checkPreferences}}},
			reached: []string{"judged", outcomeRejected, outcomePatched, outcomeUnchanged}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := newTally()
			for i := range 3 * minimumCases {
				kind := "Pod"
				if i%2 == 1 {
					kind = "Deployment"
				}
				run.add(kind, tc.verdicts[i%len(tc.verdicts)])
			}
			missed := strings.Join(run.missed(), "\n")
			for _, want := range tc.missed {
				if !strings.Contains(missed, want) {
					t.Errorf("missed %q, want it to name %q", missed, want)
				}
			}
			if len(tc.missed) == 0 && missed != "" {
				t.Errorf("missed %q, want none", missed)
			}
			for _, reached := range tc.reached {
				for _, miss := range run.missed() {
					if strings.HasPrefix(miss, reached) {
						t.Errorf("missed %q, a minimum the run reached", miss)
					}
				}
			}
		})
	}
}

// TestUpdateTallyMinimums: a run whose UPDATEs are all label-only misses the other kinds, the
// refusals, the accepted new images, the gated pins, the bound Pods judged on their Node, the
// gated Pods whose new image only NodePools run and the checks of a new image (a., no
// constraining new image, admitted platforms, a failed lookup); one with each reaches them all, and the last
// counts only where it was judged (not counted apart).
func TestUpdateTallyMinimums(t *testing.T) {
	labels := UpdateVerdict{Kind: updateLabels, Outcome: outcomeUnchanged, Judged: []string{updCheckNotPatched, updCheckNoNew}}
	// 20,000 cases: every minimum stands for at least minimumCount cases (tooFine).
	cases := 20 * minimumCases
	u := newUpdateTally()
	for range cases / 5 {
		u.add(labels)
	}
	missed := strings.Join(u.missed(cases), "; ")
	for _, want := range []string{"UPDATEs refused in 0", "UPDATEs with a new image accepted unchanged in 0", "gated Pods pinned on UPDATE in 0",
		"judged on its Node (readNodes) in 0", "UPDATEs " + updateSwap + " in 0", "UPDATEs " + updateEphemeral + " in 0",
		"UPDATEs " + updateScale + " in 0", "UPDATEs " + updateSetImage + " in 0", "only NodePools Karpenter ignores the Pod on run in 0",
		"UPDATEs judged " + updCheckA + " in 0", "UPDATEs judged " + updCheckAnywhere + " in 0", "UPDATEs judged " + updCheckAdmitted + " in 0",
		"UPDATEs judged " + updCheckLookup + " in 0"} {
		if !strings.Contains(missed, want) {
			t.Errorf("missed %q, want %q in it", missed, want)
		}
	}
	if strings.Contains(missed, "UPDATEs in") || strings.Contains(missed, updateLabels) || strings.Contains(missed, updCheckNotPatched) || strings.Contains(missed, updCheckNoNew) {
		t.Errorf("missed %q: the label-only UPDATEs reach their minimums", missed)
	}
	for range cases / 20 {
		u.add(UpdateVerdict{Kind: updateSwap, Outcome: outcomeRejected, Bound: true, Judged: []string{updCheckNotPatched, updCheckBound}})
		u.add(UpdateVerdict{Kind: updateEphemeral, Outcome: outcomeUnchanged, Judged: []string{updCheckNotPatched, updCheckAdmitted}})
		u.add(UpdateVerdict{Kind: updateSwap, Outcome: outcomePatched, Gated: true, PoolsOnly: true, Judged: []string{updCheckA, updCheckGatedPin}})
		u.add(UpdateVerdict{Kind: updateSwap, Outcome: outcomeRejected, Gated: true, PoolsOnly: true, Apart: apartGatedUnserved})
		u.add(UpdateVerdict{Kind: updateEphemeral, Outcome: outcomeUnchanged, Judged: []string{updCheckNotPatched, updCheckAnywhere}})
		u.add(UpdateVerdict{Kind: updateSwap, Outcome: outcomeRejected, Judged: []string{updCheckNotPatched, updCheckLookup}})
		u.add(UpdateVerdict{Kind: updateScale, Workload: true, Outcome: outcomeUnchanged, Judged: []string{updCheckScale}})
		u.add(UpdateVerdict{Kind: updateSetImage, Workload: true, Outcome: outcomePatched, Judged: []string{updCheckTemplate}})
	}
	if missed := u.missed(cases); len(missed) > 0 {
		t.Errorf("missed %v, want none", missed)
	}
	if u.poolsOnly != cases/20 {
		t.Errorf("poolsOnly = %d, want %d: those counted apart are not judged", u.poolsOnly, cases/20)
	}
	// UPDATEs whose lookups the time budget left out: up to maxShareBudget of the cases.
	budget := UpdateVerdict{Kind: updateSwap, Outcome: outcomeRejected, Apart: apartBudget, Judged: []string{updCheckNotPatched, updCheckLookup}}
	for range int(maxShareBudget * float64(cases)) {
		u.add(budget)
	}
	if missed := u.missed(cases); len(missed) > 0 {
		t.Errorf("missed %v at the maximum share of time budgets spent, want none", missed)
	}
	u.add(budget)
	if missed := strings.Join(u.missed(cases), "; "); !strings.Contains(missed, "UPDATEs whose lookups the time budget left out in ") {
		t.Errorf("missed %q, want the time budget's maximum passed", missed)
	}
}

// TestTooFineMinimums: a minimum is asserted where it stands for minimumCount cases or more; the
// finer ones are not in a 1,000-case run (the kwctl pass), and a run that misses only those
// passes; in 10^4 cases (CI's run) every UPDATE minimum is asserted, and the cases' finer ones.
func TestTooFineMinimums(t *testing.T) {
	if !tooFine(0.0015, 1000) || tooFine(0.003, 1000) || tooFine(minSharePoolsOnly, 10*minimumCases) {
		t.Errorf("tooFine: want 0.15%% of 1,000 cases too fine, 0.3%% not, nor any minimum in 10^4 cases")
	}
	u := newUpdateTally()
	for range 200 {
		u.add(UpdateVerdict{Kind: updateLabels, Outcome: outcomeUnchanged, Judged: []string{updCheckNotPatched, updCheckNoNew}})
	}
	for range 20 {
		for _, kind := range updateKinds {
			u.add(UpdateVerdict{Kind: kind, Outcome: outcomeRejected, Judged: []string{updCheckNotPatched, updCheckAdmitted}})
			u.add(UpdateVerdict{Kind: kind, Outcome: outcomeUnchanged, Judged: []string{updCheckNotPatched, updCheckAdmitted}})
		}
	}
	if missed := u.missed(minimumCases); len(missed) > 0 {
		t.Errorf("missed %v in 1,000 cases, want none: the others are too fine for it", missed)
	}
	notAsserted := u.notAsserted(minimumCases)
	for _, want := range []string{"UPDATEs judged " + updCheckAnywhere + " 0.15%", "UPDATEs judged " + updCheckA + " 0.2%", "only NodePools Karpenter ignores the Pod on run 0.03%"} {
		if !strings.Contains(notAsserted, want) {
			t.Errorf("not asserted %q, want %q in it", notAsserted, want)
		}
	}
	if strings.Contains(notAsserted, "UPDATEs refused") {
		t.Errorf("not asserted %q: refused (0.85%%) stands for 8.5 cases", notAsserted)
	}
	if missed := strings.Join(u.missed(10*minimumCases), "; "); !strings.Contains(missed, "UPDATEs judged "+updCheckAnywhere+" in 0") {
		t.Errorf("missed %q in 10^4 cases, want no constraining new image in it", missed)
	}
	if got := u.notAsserted(10 * minimumCases); got != "none" {
		t.Errorf("not asserted %q in 10^4 cases, want none", got)
	}
	// The cases' minimums alike: all refused, 1,000 cases miss b. but not the finer "no image
	// of a CPU architecture" (0.1%: one case), which 10^4 cases miss.
	refused := Verdict{Rejected: true, Judged: []string{checkMessage, checkD}, Skipped: []string{skipRejected}}
	noArch := "no image of a CPU architecture looked up, judged"
	for _, tc := range []struct {
		cases        int
		missesNoArch bool
	}{{minimumCases, false}, {10 * minimumCases, true}} {
		run := newTally()
		for range tc.cases {
			run.add("Pod", refused)
		}
		missed := strings.Join(run.missed(), "; ")
		if !strings.Contains(missed, "b. judged in 0") || strings.Contains(missed, noArch) != tc.missesNoArch {
			t.Errorf("%d cases: missed %q, want b. in it, and %q in it: %v", tc.cases, missed, noArch, tc.missesNoArch)
		}
		if notAsserted := run.notAsserted(); strings.Contains(notAsserted, noArch) == tc.missesNoArch {
			t.Errorf("%d cases: not asserted %q, want %q in it: %v", tc.cases, notAsserted, noArch, !tc.missesNoArch)
		}
	}
}

// TestBudgetSpent: the policy's words for a lookup the time budget left out, in its message or a
// warning, and nothing else.
func TestBudgetSpent(t *testing.T) {
	spent := `image "r/a:1": not looked up: the lookup time budget (lookupBudgetMilliseconds: 1500) was spent after 1507 ms`
	for _, tc := range []struct {
		name     string
		message  string
		warnings []string
		want     bool
	}{
		{name: "refused", message: "image-arch-affinity: " + spent, want: true},
		{name: "a warning", warnings: []string{"other", "image-arch-affinity: the Pod was not pinned: " + spent}, want: true},
		{name: "shortened", warnings: []string{`image-arch-affinity: the Pod was not pinned to an architecture because a lookup failed: image "127.0.0.1:1/gen/ … 91f4": not looked up: the lookup time budget (lookupBudgetM … ) was spent after 1518 ms`}, want: true},
		{name: "another lookup failure", message: `image-arch-affinity: image "r/a:1": manifest unknown`, warnings: []string{"lookupBudgetMilliseconds"}},
		{name: "nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := budgetSpent(tc.message, tc.warnings); got != tc.want {
				t.Errorf("budgetSpent(%q, %q) = %v, want %v", tc.message, tc.warnings, got, tc.want)
			}
		})
	}
}
