package rtfs_test

import (
	"fmt"

	"github.com/caphub/caphub/format/rtfs"
)

func ExampleReadCapabilities() {
	src := []byte(`(capability "mcp.github.list_issues"
  :name "list_issues"
  :version "1.0.0"
  :description "List the issues of a repository"
  :input-schema [:map [:owner :string] [:repo :string] [:state :string?]])`)
	defs, failures, err := rtfs.ReadCapabilities("github.rtfs", src)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range defs {
		fmt.Println(d.URI, d.Bindings.MCP.Server, d.Bindings.MCP.Tool)
		fmt.Println(d.Input["required"])
	}
	fmt.Println(len(failures), "failures")
	// Output:
	// mcp:github/list_issues@1.0 github list_issues
	// [owner repo]
	// 0 failures
}
