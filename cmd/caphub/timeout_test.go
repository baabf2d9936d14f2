package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestGaveUpOnServer: an import the server has not accepted as a job when
// --timeout passes exits 7 (exitGaveUp) saying that the server may still
// complete it and how to check, and never reports the work as failed.
func TestGaveUpOnServer(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		<-release // still importing
	}))
	defer srv.Close()
	defer close(release)

	code, out, errOut := caphub(t, "import", "openapi", openapiTestdata+"petstore30.yaml", "--domain", "pets", "--server", srv.URL, "--timeout", "300ms")
	if code != exitGaveUp {
		t.Errorf("exit %d, want %d (gave up)\n%s%s", code, exitGaveUp, out, errOut)
	}
	for _, want := range []string{"gave up waiting for caphub server " + srv.URL + " to answer POST /registry/jobs after 3",
		"the server may still complete", "check with `caphub capability list --server URL --all-versions`", "run the same command again"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(out+errOut, "failed") {
		t.Errorf("work the server may complete is reported as failed:\n%s%s", out, errOut)
	}
}

// TestServerTimeoutDefaults: imports and capability register wait 10
// minutes for a server by default, other commands a minute; --timeout
// overrides both, 0 meaning no limit.
func TestServerTimeoutDefaults(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want time.Duration
	}{
		{[]string{"import", "openapi", "x"}, longTimeout},
		{[]string{"import", "agentos", "x"}, longTimeout},
		{[]string{"import", "rtfs", "x"}, longTimeout},
		{[]string{"capability", "register", "x"}, longTimeout},
		{[]string{"capability", "list"}, time.Minute},
		{[]string{"invoke", "x"}, time.Minute},
		{[]string{"import", "openapi", "x", "--timeout", "0"}, 0},
		{[]string{"capability", "list", "--timeout", "2h"}, 2 * time.Hour},
	} {
		root := newRootCmd()
		cmd, rest, err := root.Find(tt.args)
		if err == nil {
			err = cmd.ParseFlags(rest)
		}
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if got := serverTimeout(cmd); got != tt.want {
			t.Errorf("%v: timeout %v, want %v", tt.args, got, tt.want)
		}
	}
	if longTimeout != 10*time.Minute {
		t.Errorf("longTimeout is %v: update the help texts that say 10 minutes (10m)", longTimeout)
	}
	code, out, _ := caphub(t, "import", "openapi", "--help")
	if code != 0 || !strings.Contains(out, "Exit status 7: caphub gave up waiting before the server answered") {
		t.Errorf("import openapi --help does not document exit status 7:\n%s", out)
	}
}
