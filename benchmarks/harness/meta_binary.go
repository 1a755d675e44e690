package harness

// BinaryMeta is a run's Meta with the version of the tidegate binary it
// started (the server or proxy under test), for the tools that run one
// binary as their child.
type BinaryMeta struct {
	Meta
	// ProxyVersion is what the binary's `version` printed; empty when it
	// said nothing.
	ProxyVersion string `json:"proxy_version,omitempty"`
}

// RevisionNote is what a report's revision line adds after the tool's
// revision: that it is the tool's, and the version of the binary, named
// what ("proxy", "server"), when known.
func (m BinaryMeta) RevisionNote(what string) string {
	note := " (tool)"
	if m.ProxyVersion != "" {
		note += "; " + what + " binary: " + m.ProxyVersion
	}
	return note
}
