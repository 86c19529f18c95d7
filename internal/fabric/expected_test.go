package fabric

import "testing"

func TestExpectedDevices(t *testing.T) {
	t.Parallel()
	for typ, want := range map[string]int{
		"p4d.24xlarge": 4, "p4de.24xlarge": 4, "p5.48xlarge": 32, "p5e.48xlarge": 32,
		"p5en.48xlarge": 16, "p6-b200.48xlarge": 8,
		"p5.4xlarge": 0, "g6e.48xlarge": 0, "": 0, "P5.48XLARGE": 0,
	} {
		if got := ExpectedDevices(typ); got != want {
			t.Errorf("ExpectedDevices(%q) = %d, want %d", typ, got, want)
		}
	}
}
