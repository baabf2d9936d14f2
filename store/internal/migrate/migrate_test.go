package migrate

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoad(t *testing.T) {
	file := func(sql string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(sql)} }
	migs, err := Load(fstest.MapFS{
		"migrations/0002_docs.sql": file("B"),
		"migrations/0001_init.sql": file("A"),
		"migrations/0010_more.sql": file("C"),
	})
	if err != nil || len(migs) != 3 || migs[0] != (Migration{1, "init", "A"}) || migs[1].Version != 2 || migs[2] != (Migration{10, "more", "C"}) {
		t.Fatalf("Load = %+v, %v; want 1, 2, 10 in order", migs, err)
	}
	for name, fsys := range map[string]fstest.MapFS{
		"not named NNNN_name.sql": {"migrations/init.sql": file("A")},
		"numbered 1":              {"migrations/0001_a.sql": file("A"), "migrations/01_b.sql": file("B")},
	} {
		if _, err := Load(fsys); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("Load: %v, want an error saying %q", err, name)
		}
	}
}
