package metric

import "testing"

// Every metric has a unit and a sentence, and nothing else is described.
func TestDescriptionsCoverNames(t *testing.T) {
	t.Parallel()
	for _, n := range Names {
		if d := Descriptions[n]; d.Unit == "" || d.Text == "" {
			t.Errorf("metric %s has no unit or description in Descriptions", n)
		}
	}
	if len(Descriptions) != len(Names) {
		t.Errorf("Descriptions has %d entries for %d metrics: it describes a name not in Names", len(Descriptions), len(Names))
	}
}
