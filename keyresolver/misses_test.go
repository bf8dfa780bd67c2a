package keyresolver

import (
	"fmt"
	"testing"
	"time"
)

func TestMisses(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	m := NewMisses(3, time.Minute)
	m.Add("a", t0)
	m.Add("b", t0.Add(time.Second))
	m.Add("c", t0.Add(2*time.Second))
	m.Add("a", t0.Add(3*time.Second)) // refreshed: now the newest
	m.Add("d", t0.Add(4*time.Second)) // drops the oldest, b
	steps := []struct {
		key  string
		at   time.Duration
		want bool
	}{
		{"a", 10 * time.Second, true},
		{"b", 10 * time.Second, false},
		{"c", 10 * time.Second, true},
		{"d", 10 * time.Second, true},
		{"c", 62 * time.Second, false}, // expired
		{"a", 62 * time.Second, true},
		{"never", 0, false},
	}
	for _, st := range steps {
		if got, _ := m.Recent(st.key, t0.Add(st.at)); got != st.want {
			t.Errorf("Recent(%q) at +%v = %v, want %v", st.key, st.at, got, st.want)
		}
	}
	m.Forget("a")
	if got, _ := m.Recent("a", t0.Add(10*time.Second)); got {
		t.Error("a forgotten but still recent")
	}
	for i := range 1000 {
		m.Add(fmt.Sprint(i), t0)
	}
	if m.Len() != 3 {
		t.Errorf("Len = %d after a flood, want 3", m.Len())
	}
}
