package registry_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/registry"
	"github.com/caphub/caphub/store/sqlite"
)

// A registry on a SQLite file: register a capability version, then
// resolve a URI without a version to it.
func ExampleService() {
	dir, err := os.MkdirTemp("", "caphub-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "registry.db"))
	if err != nil {
		log.Fatal(err)
	}
	svc := registry.NewService(st)
	defer svc.Close()

	res, err := svc.Register(ctx, capability.Definition{
		URI: "ossa:security/scan@1.0", Name: "scan", Domain: "security", Version: "1.0.3",
		Description: "Scans a repository for known vulnerabilities",
		Input:       capability.Schema{"type": "object"}, Output: capability.Schema{"type": "object"},
		Bindings: capability.Bindings{Native: &capability.NativeBinding{Handler: "scan"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("registered", res.URI, res.Version, res.Created)

	r, err := svc.Resolve(ctx, "ossa:security/scan")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("resolved", r.URI, r.Version)
	// Output:
	// registered ossa:security/scan@1.0 1.0.3 true
	// resolved ossa:security/scan@1.0 1.0.3
}
