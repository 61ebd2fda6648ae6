// Package version reports what a command binary was built from.
package version

import "runtime/debug"

// String is the module version and VCS revision the binary was built from,
// as far as the Go toolchain recorded them, and the Go version.
func String() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown version)"
	}
	v := info.Main.Version
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if revision := settings["vcs.revision"]; revision != "" {
		v += " " + revision[:min(12, len(revision))]
		if settings["vcs.modified"] == "true" {
			v += " (modified)"
		}
	}
	return v + " " + info.GoVersion
}
