package capability

import "fmt"

// ImportFailure is one item an importer could not turn into a Definition
// (or the registry refused). Importers report every failure and go on.
type ImportFailure struct {
	Item   string `json:"item"`   // what was being imported: an operation, a tool, a form
	Reason string `json:"reason"` // what was wrong and what to do
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
}

func (f ImportFailure) String() string {
	where := ""
	if f.File != "" {
		where = f.File
		if f.Line > 0 {
			where += fmt.Sprintf(":%d:%d", f.Line, f.Column)
		}
		where += ": "
	}
	return where + f.Item + ": " + f.Reason
}
