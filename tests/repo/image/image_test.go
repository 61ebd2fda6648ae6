// Package image tests `make image`: the external scaler's image built
// without a container engine, unpacked and run. Its own package, so that its
// two cross-compiles get their own test timeout.
package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/internal/testhelp"
)

const root = "../../.."

// runVersion runs `bin --version` and returns its one line of output.
func runVersion(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", bin, err, out)
	}
	return strings.TrimSpace(string(out))
}

// ociDescriptor, ociIndex, ociManifest and ociConfig are the parts of the
// OCI image spec the test reads.
type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Annotations map[string]string `json:"annotations"`
	Platform    *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

type ociIndex struct {
	MediaType string          `json:"mediaType"`
	Manifests []ociDescriptor `json:"manifests"`
}

type ociManifest struct {
	MediaType string          `json:"mediaType"`
	Config    ociDescriptor   `json:"config"`
	Layers    []ociDescriptor `json:"layers"`
}

type ociConfig struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Config       struct {
		User       string   `json:"User"`
		Entrypoint []string `json:"Entrypoint"`
	} `json:"config"`
}

// ociArchive is an OCI image layout read from a tar file.
type ociArchive map[string][]byte

func (a ociArchive) blob(t *testing.T, digest string, into any) []byte {
	t.Helper()
	alg, hex, _ := strings.Cut(digest, ":")
	raw, ok := a["blobs/"+alg+"/"+hex]
	if !ok {
		t.Fatalf("blob %s is not in the archive", digest)
	}
	if into != nil {
		if err := json.Unmarshal(raw, into); err != nil {
			t.Fatalf("blob %s: %v", digest, err)
		}
	}
	return raw
}

// unpackLayers applies the image's layers in order under dir (regular
// files, directories and symlinks; the image has no whiteouts).
func unpackLayers(t *testing.T, a ociArchive, m ociManifest, dir string) {
	t.Helper()
	for _, l := range m.Layers {
		if l.MediaType != "application/vnd.oci.image.layer.v1.tar+gzip" {
			t.Fatalf("layer media type %q", l.MediaType)
		}
		zr, err := gzip.NewReader(bytes.NewReader(a.blob(t, l.Digest, nil)))
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(zr)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			name := path.Clean(h.Name)
			if strings.HasPrefix(name, "../") || path.IsAbs(name) || strings.Contains(path.Base(name), ".wh.") {
				t.Fatalf("unexpected layer entry %q", h.Name)
			}
			to := filepath.Join(dir, filepath.FromSlash(name))
			switch h.Typeflag {
			case tar.TypeDir:
				if err := os.MkdirAll(to, 0o755); err != nil {
					t.Fatal(err)
				}
			case tar.TypeReg:
				if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
					t.Fatal(err)
				}
				raw, err := io.ReadAll(tr)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(to, raw, os.FileMode(h.Mode).Perm()|0o200); err != nil {
					t.Fatal(err)
				}
			default:
				t.Fatalf("layer entry %q has type %c", h.Name, h.Typeflag)
			}
		}
	}
}

// make image builds the external scaler's image without a container
// engine: an OCI layout tarball with one manifest per platform. For each:
// a static binary of the right architecture at the entrypoint, a CA bundle
// at /etc/ssl/certs, a non-root user that /etc/passwd names; the host's
// platform is unpacked and its entrypoint run with --version.
func TestMakeImageBuildsARunnableImage(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles the external scaler for two platforms")
	}
	if _, err := os.Stat("/etc/ssl/certs/ca-certificates.crt"); err != nil {
		t.Fatalf("make image needs Debian's ca-certificates (apt-get install ca-certificates): %v", err)
	}
	dir := t.TempDir()
	tarPath := filepath.Join(dir, "image.tar")
	const version = "v0.0.0-image-test"
	cmd := exec.Command("make", "-s", "--no-print-directory", "image", "IMAGE_TAR="+tarPath, "VERSION="+version)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	testhelp.NetworkStep(t, "make image", "the Go module proxy (deploy/image's modules)", err, out)
	f, err := os.Open(tarPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	archive := ociArchive{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			raw, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			archive[strings.TrimPrefix(h.Name, "./")] = raw
		}
	}
	if layout := string(archive["oci-layout"]); !strings.Contains(layout, `"imageLayoutVersion"`) {
		t.Fatalf("no oci-layout file in the archive (%q)", layout)
	}
	var top ociIndex
	if err := json.Unmarshal(archive["index.json"], &top); err != nil || len(top.Manifests) != 1 {
		t.Fatalf("index.json: %v, %d entries, want one image index", err, len(top.Manifests))
	}
	if ref := top.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; ref != version {
		t.Errorf("index.json names the image %q, want %q", ref, version)
	}
	var index ociIndex
	archive.blob(t, top.Manifests[0].Digest, &index)
	if index.MediaType != "application/vnd.oci.image.index.v1+json" {
		t.Errorf("image index media type %q", index.MediaType)
	}
	platforms := map[string]ociDescriptor{}
	for _, m := range index.Manifests {
		if m.Platform != nil {
			platforms[m.Platform.OS+"/"+m.Platform.Architecture] = m
		}
	}
	elfMachine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	ran := false
	for _, platform := range []string{"linux/amd64", "linux/arm64"} {
		t.Run(strings.ReplaceAll(platform, "/", "-"), func(t *testing.T) {
			desc, ok := platforms[platform]
			if !ok {
				t.Fatalf("the image index has no %s manifest (has %v)", platform, platforms)
			}
			var m ociManifest
			archive.blob(t, desc.Digest, &m)
			var cfg ociConfig
			archive.blob(t, m.Config.Digest, &cfg)
			if cfg.OS+"/"+cfg.Architecture != platform {
				t.Errorf("config platform %s/%s", cfg.OS, cfg.Architecture)
			}
			uid, _, _ := strings.Cut(cfg.Config.User, ":")
			if uid == "" || uid == "0" || uid == "root" {
				t.Errorf("the image runs as %q, want a non-root user", cfg.Config.User)
			}
			if len(cfg.Config.Entrypoint) != 1 {
				t.Fatalf("entrypoint %q", cfg.Config.Entrypoint)
			}
			rootfs := filepath.Join(dir, strings.ReplaceAll(platform, "/", "-"))
			unpackLayers(t, archive, m, rootfs)

			ca, err := os.ReadFile(filepath.Join(rootfs, "etc/ssl/certs/ca-certificates.crt"))
			if err != nil || bytes.Count(ca, []byte("-----BEGIN CERTIFICATE-----")) < 10 {
				t.Errorf("/etc/ssl/certs/ca-certificates.crt: %v, %d certificates", err, bytes.Count(ca, []byte("BEGIN CERTIFICATE")))
			}
			passwd, _ := os.ReadFile(filepath.Join(rootfs, "etc/passwd"))
			if !strings.Contains(string(passwd), ":x:"+uid+":") {
				t.Errorf("/etc/passwd does not name user %s:\n%s", uid, passwd)
			}

			bin := filepath.Join(rootfs, filepath.FromSlash(strings.TrimPrefix(cfg.Config.Entrypoint[0], "/")))
			ef, err := elf.Open(bin)
			if err != nil {
				t.Fatalf("entrypoint %s: %v", cfg.Config.Entrypoint[0], err)
			}
			defer ef.Close()
			if want := elfMachine[cfg.Architecture]; ef.Machine != want {
				t.Errorf("entrypoint is built for %v, want %v", ef.Machine, want)
			}
			for _, p := range ef.Progs {
				if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
					t.Errorf("entrypoint is dynamically linked (%v): build it with CGO_ENABLED=0", p.Type)
				}
			}
			if platform != runtime.GOOS+"/"+runtime.GOARCH {
				return
			}
			ran = true
			got := runVersion(t, bin)
			if want := "cosmosdb-external-scaler " + version + " commit "; !strings.HasPrefix(got, want) || strings.Contains(got, "commit unknown") {
				t.Errorf("the image's entrypoint --version printed %q, want %q<commit>…", got, want)
			}
		})
	}
	if !ran && runtime.GOOS == "linux" && (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64") {
		t.Error("the host platform's entrypoint was not run")
	}
}
