package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

func buildInfo(mainVersion string, settings ...string) func() (*debug.BuildInfo, bool) {
	return func() (*debug.BuildInfo, bool) {
		info := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Version: mainVersion}}
		for i := 0; i+1 < len(settings); i += 2 {
			info.Settings = append(info.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return info, true
	}
}

func TestVersionAndCommit(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		name            string
		stamped, commit string
		read            func() (*debug.BuildInfo, bool)
		want            string
	}{
		{"no build info", "", "", func() (*debug.BuildInfo, bool) { return nil, false }, "unknown commit unknown "},
		{"devel without vcs", "", "", buildInfo("(devel)"), "(devel) commit unknown go1.99.1 "},
		{"vcs revision", "", "", buildInfo("(devel)", "vcs.revision", sha, "vcs.modified", "false"), "(devel) commit 0123456789ab go1.99.1 "},
		{"vcs modified", "", "", buildInfo("(devel)", "vcs.revision", sha, "vcs.modified", "true"), "(devel) commit 0123456789ab (modified) go1.99.1 "},
		{"stamped wins", "v1.2.3", sha, buildInfo("(devel)", "vcs.revision", "ffffffffffff"), "v1.2.3 commit 0123456789ab go1.99.1 "},
		{"stamped dirty", "v1.2.3", sha + "-dirty", buildInfo("(devel)"), "v1.2.3 commit 0123456789ab (modified) go1.99.1 "},
		{"stamped version only", "v1.2.3", "", buildInfo("(devel)", "vcs.revision", sha), "v1.2.3 commit 0123456789ab go1.99.1 "},
	} {
		i := get(tc.stamped, tc.commit, tc.read)
		if got := i.String(); !strings.HasPrefix(got, tc.want) || !strings.HasSuffix(got, i.Platform) {
			t.Errorf("%s: %q, want prefix %q", tc.name, got, tc.want)
		}
	}
	if got := get("", sha, buildInfo("")).Commit; got != sha {
		t.Errorf("Commit %q, want the full revision", got)
	}
}
