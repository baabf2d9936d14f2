package main

import (
	"github.com/caphub/caphub/format/agentos"
	"github.com/caphub/caphub/registry"
	"github.com/spf13/cobra"
)

// newImportAgentOSCmd is `caphub import agentos FILE`: it reads an Agent OS
// capabilities.json and registers one capability per manifest entry,
// reporting the entries it could not import and going on with the others.
func newImportAgentOSCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agentos FILE",
		Short: "Import an Agent OS app manifest (capabilities.json)",
		Long: `Import reads an Agent OS capability manifest (an app's agentos/capabilities.json) and
registers each capability as ossa:<package>/<id>@MAJOR.MINOR: com.whatsapp's send_message
becomes ossa:com-whatsapp/send_message@1.0. Intents, keywords, permissions and the UI flag
are kept; inputs become the input JSON Schema (vault keys as x-vault-key); outputs the
output schema.

The handler (intent, service, broadcast or deeplink) is kept as a binding of its kind. It
runs only on the device with the app installed: caphub serves it but cannot invoke it.

The version is the manifest's "version" when it has one, else 1.0.0. Registered versions
are immutable: to import a changed manifest, give a new version with --set-version.

Capabilities that cannot be imported are listed with file:line:column and the others are
registered; the command then exits with status 1.`,
		Example: "  caphub import agentos ./whatsapp/agentos/capabilities.json\n" +
			"  caphub import agentos capabilities.json --set-version 1.1.0 --db ./caphub.db\n" +
			"  caphub capability search '' --intent messaging.send_text",
		Args: exactArgs(1, "the manifest FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			version, _ := cmd.Flags().GetString("set-version")
			res, err := agentos.ImportFile(args[0], agentos.Options{Version: version})
			if err != nil {
				return err
			}
			return withRegistry(cmd, func(reg registry.API) error {
				return registerImported(cmd, reg, res.Definitions, res.Failures)
			})
		},
	}
	cmd.Flags().String("set-version", "", "register every capability at this version (MAJOR.MINOR.PATCH) instead of the manifest's")
	return longServerWork(cmd)
}
