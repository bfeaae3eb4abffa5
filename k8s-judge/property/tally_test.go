package property

import (
	"strings"
	"testing"
)

// TestTallyMinimums: a run whose cases are all refused, judged on d. alone, misses the minimums
// of b., c., patched and accepted unchanged, each named; one that judges every check and outcome
// in its shares misses none.
func TestTallyMinimums(t *testing.T) {
	vacuous := newTally()
	for range minimumCases {
		vacuous.add("Pod", Verdict{Rejected: true, Judged: []string{checkMessage, checkD}, Skipped: []string{skipRejected}})
	}
	missed := strings.Join(vacuous.missed(), "\n")
	for _, want := range []string{"b. judged in 0 (0.0%)", "c. judged in 0", outcomePatched + " in 0", outcomeUnchanged + " in 0"} {
		if !strings.Contains(missed, want) {
			t.Errorf("missed %q, want it to name %q", missed, want)
		}
	}
	if strings.Contains(missed, "d. judged") || strings.Contains(missed, outcomeRejected) {
		t.Errorf("missed %q names a minimum the run reached", missed)
	}
	full := newTally()
	for i := range 3 * minimumCases {
		switch i % 3 {
		case 0:
			full.add("Pod", Verdict{Rejected: true, Judged: []string{checkD}})
		case 1:
			full.add("Deployment", Verdict{Patched: true, Judged: []string{checkD, checkB, checkC}})
		default:
			full.add("Pod", Verdict{Judged: []string{checkD, checkB, checkC}})
		}
	}
	if missed := full.missed(); len(missed) > 0 {
		t.Errorf("missed %q", missed)
	}
}
