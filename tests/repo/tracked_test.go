package repo

import (
	"bufio"
	"bytes"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

const maxTrackedFileSize = 1 << 20

// No built file is tracked: nothing git tracks is an executable binary
// (ELF, Mach-O, PE, or any mode-755 file that is not a #! script), and no
// tracked file is over 1 MiB. Checked against the index (git ls-files),
// so a file .gitignore lists but git still tracks is caught too.
func TestNoBuiltFileIsTracked(t *testing.T) {
	// mode, blob and path of every tracked file
	type entry struct{ mode, blob, path string }
	var entries []entry
	for rec := range strings.SplitSeq(run(t, "git", "ls-files", "--stage", "-z"), "\x00") {
		if rec == "" {
			continue
		}
		meta, path, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 {
			t.Fatalf("unexpected git ls-files record %q", rec)
		}
		entries = append(entries, entry{f[0], f[1], path})
	}
	if len(entries) < 50 {
		t.Fatalf("git ls-files listed only %d files", len(entries))
	}
	var blobs bytes.Buffer
	for _, e := range entries {
		blobs.WriteString(e.blob + "\n")
	}
	// One git cat-file --batch for every blob: "<sha> blob <size>\n<content>\n".
	cmd := exec.Command("git", "cat-file", "--batch")
	cmd.Dir, cmd.Stdin = root, &blobs
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git cat-file: %v", err)
	}
	r := bufio.NewReader(bytes.NewReader(out))
	for _, e := range entries {
		header, err := r.ReadString('\n')
		f := strings.Fields(header)
		if err != nil || len(f) != 3 {
			t.Fatalf("git cat-file: header %q for %s: %v", header, e.path, err)
		}
		size, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			t.Fatalf("git cat-file: size in %q", header)
		}
		content := make([]byte, size+1)
		if _, err := io.ReadFull(r, content); err != nil {
			t.Fatalf("git cat-file: content of %s: %v", e.path, err)
		}
		if e.mode == "160000" || e.mode == "120000" { // submodule, symlink
			continue
		}
		if size > maxTrackedFileSize {
			t.Errorf("%s is tracked and %d bytes (over 1 MiB): build outputs and large data stay out of git", e.path, size)
		}
		head := content[:min(4, size)]
		switch {
		case bytes.HasPrefix(head, []byte("\x7fELF")),
			bytes.HasPrefix(head, []byte("MZ")),
			bytes.HasPrefix(head, []byte{0xcf, 0xfa, 0xed, 0xfe}), bytes.HasPrefix(head, []byte{0xce, 0xfa, 0xed, 0xfe}),
			bytes.HasPrefix(head, []byte{0xca, 0xfe, 0xba, 0xbe}):
			t.Errorf("%s is a tracked executable binary: git rm --cached it and let .gitignore cover it", e.path)
		case e.mode == "100755" && !bytes.HasPrefix(head, []byte("#!")):
			t.Errorf("%s is tracked as executable (mode 755) but is not a #! script", e.path)
		}
	}
}
