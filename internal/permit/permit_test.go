package permit

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

func TestCommand(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	for i, tc := range []struct {
		p    *Permits
		name string
		ok   bool
	}{
		{nil, "sh", false},
		{&Permits{}, "sh", false},
		{&Permits{Commands: []string{"node"}}, "sh", false},
		{&Permits{Commands: []string{"sh"}}, "sh", true},
		{&Permits{Commands: []string{"sh"}}, sh, true}, // the same file by path
		{&Permits{Commands: []string{sh}}, "sh", true},
		{&Permits{Commands: []string{"*"}}, "/bin/anything", true},
		{Operator, "sh", true},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			err := tc.p.Command(tc.name, sh, exec.LookPath)
			if (err == nil) != tc.ok {
				t.Errorf("%+v Command(%s) = %v, want ok=%v", tc.p, tc.name, err, tc.ok)
			}
			if err != nil && (!errors.Is(err, ErrCommand) || !strings.Contains(err.Error(), "--allow-command")) {
				t.Errorf("refusal %v does not name the flag", err)
			}
		})
	}
}

func TestEnv(t *testing.T) {
	t.Setenv("CAPHUB_TEST_SECRET", "s3cret")
	p := &Permits{Env: []string{"OTHER"}}
	if v, ok := p.Getenv("CAPHUB_TEST_SECRET"); ok || v != "" {
		t.Errorf("an unlisted variable was read: %q", v)
	}
	if _, err := p.Lookup("CAPHUB_TEST_SECRET"); !errors.Is(err, ErrEnv) || !strings.Contains(err.Error(), "--allow-env CAPHUB_TEST_SECRET") {
		t.Errorf("Lookup: %v", err)
	}
	if _, ok := p.Getenv("PATH"); !ok {
		t.Error("PATH is base environment, always readable")
	}
	p.Env = append(p.Env, "CAPHUB_TEST_SECRET")
	if v, err := p.Lookup("CAPHUB_TEST_SECRET"); err != nil || v != "s3cret" {
		t.Errorf("a listed variable: %q %v", v, err)
	}
	if _, err := p.Lookup("OTHER"); err == nil || errors.Is(err, ErrEnv) {
		t.Errorf("an allowed but unset variable: %v", err)
	}
	if v, ok := Operator.Getenv("CAPHUB_TEST_SECRET"); !ok || v != "s3cret" {
		t.Error("Operator reads any variable")
	}
}
