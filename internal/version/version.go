// Package version reports what a command binary was built from.
//
// The version and the commit come from, in this order:
//
//  1. what the build stamped with the linker (image builds, releases):
//
//     go build -ldflags "-X github.com/kedacore/keda-cosmosdb-scaler/internal/version.version=v1.2.3
//     -X github.com/kedacore/keda-cosmosdb-scaler/internal/version.commit=<sha>" ./cmd/...
//
//  2. the build information the Go toolchain recorded: the main module's
//     version and, in a git checkout built with -buildvcs (the default unless
//     GOFLAGS says otherwise), vcs.revision and vcs.modified.
package version

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Set with -ldflags -X (see the package comment); empty when not stamped.
var (
	version string
	commit  string
)

// Unknown stands for a version or commit nobody recorded.
const Unknown = "unknown"

// Info is what a binary knows of its origin.
type Info struct {
	Version  string // v1.2.3, a pseudo-version, "(devel)" or Unknown
	Commit   string // the full VCS revision, or Unknown
	Modified bool   // built from a work tree with uncommitted changes
	Go       string // the Go toolchain's version
	Platform string // GOOS/GOARCH
}

// Get returns the binary's Info.
func Get() Info {
	return get(version, commit, debug.ReadBuildInfo)
}

func get(stampedVersion, stampedCommit string, read func() (*debug.BuildInfo, bool)) Info {
	i := Info{Version: Unknown, Commit: Unknown, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info, ok := read(); ok {
		if info.Main.Version != "" {
			i.Version = info.Main.Version
		}
		if info.GoVersion != "" {
			i.Go = info.GoVersion
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				if s.Value != "" {
					i.Commit = s.Value
				}
			case "vcs.modified":
				i.Modified = s.Value == "true"
			}
		}
	}
	if v := strings.TrimSpace(stampedVersion); v != "" {
		i.Version = v
	}
	if c := strings.TrimSpace(stampedCommit); c != "" {
		i.Commit, i.Modified = c, strings.HasSuffix(c, "-dirty")
		i.Commit = strings.TrimSuffix(i.Commit, "-dirty")
	}
	return i
}

// String is the one line --version prints after the command's name:
//
//	v1.2.3 commit 0123456789ab go1.26.8 linux/amd64
//	(devel) commit 0123456789ab (modified) go1.26.8 linux/amd64
//	(devel) commit unknown go1.26.8 linux/amd64
func String() string { return Get().String() }

func (i Info) String() string {
	c := i.Commit
	if c != Unknown {
		c = c[:min(12, len(c))]
	}
	s := i.Version + " commit " + c
	if i.Modified {
		s += " (modified)"
	}
	return s + " " + i.Go + " " + i.Platform
}
