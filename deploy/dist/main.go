// Command dist builds Palaver's release files from a built binary (`make dist`): a tar.gz archive
// with the binary, its help text, the README, the pages of docs/ and the deploy/ files, and a
// Debian package (nfpm, as a library) that installs the binary, a hardened systemd unit running as
// the user palaver, a default configuration file and the documentation; then SHA256SUMS.
//
// It is a module of its own so that nfpm's dependencies stay out of Palaver's go.mod.
//
//	go run . --binary ../../bin/palaver --root ../.. --out ../../dist
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	"github.com/goreleaser/nfpm/v2/files"
)

func main() {
	binary := flag.String("binary", "", "the palaver binary to package (linux)")
	root := flag.String("root", "../..", "the repository root")
	out := flag.String("out", "dist", "output directory")
	arch := flag.String("arch", "amd64", "the binary's architecture (Debian name)")
	flag.Parse()
	if err := buildRelease(*binary, *root, *out, *arch); err != nil {
		fmt.Fprintln(os.Stderr, "dist:", err)
		os.Exit(1)
	}
}

// file is one file of the release: where it comes from, where it goes in the archive and in the
// package ("" for not at all), its mode, and whether it is a configuration file.
type file struct {
	src, archive, pkg string
	mode              os.FileMode
	config            bool
}

// buildRelease writes the archive, the Debian package and SHA256SUMS to out.
func buildRelease(binary, root, out, arch string) error {
	if binary == "" {
		return fmt.Errorf("--binary is required")
	}
	version, help, err := describe(binary)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	helpFile := filepath.Join(out, "palaver.txt")
	if err := os.WriteFile(helpFile, help, 0o644); err != nil {
		return err
	}
	r := func(p string) string { return filepath.Join(root, p) }
	list := []file{
		{binary, "palaver", "/usr/bin/palaver", 0o755, false},
		{helpFile, "palaver.txt", "/usr/share/doc/palaver/palaver.txt", 0o644, false},
		{r("README.md"), "README.md", "/usr/share/doc/palaver/README.md", 0o644, false},
		{r("docs/operations.md"), "docs/operations.md", "/usr/share/doc/palaver/operations.md", 0o644, false},
		{r("deploy/debian/palaver.service"), "deploy/palaver.service", "/lib/systemd/system/palaver.service", 0o644, false},
		{r("deploy/debian/palaver.conf"), "deploy/palaver.conf", "/etc/palaver/palaver.conf", 0o640, true},
		{r("deploy/prometheus/palaver-rules.yml"), "deploy/prometheus/palaver-rules.yml", "/usr/share/doc/palaver/prometheus/palaver-rules.yml", 0o644, false},
		{r("deploy/grafana/palaver-dashboard.json"), "deploy/grafana/palaver-dashboard.json", "/usr/share/doc/palaver/grafana/palaver-dashboard.json", 0o644, false},
	}
	// The other reference pages, beside operations.md so that its links to them resolve.
	pages, err := filepath.Glob(r("docs/*.md"))
	if err != nil {
		return err
	}
	for _, page := range pages {
		if name := filepath.Base(page); name != "operations.md" {
			list = append(list, file{page, "docs/" + name, "/usr/share/doc/palaver/" + name, 0o644, false})
		}
	}
	base := fmt.Sprintf("palaver_%s_linux_%s", version, arch)
	archive := filepath.Join(out, base+".tar.gz")
	if err := writeArchive(archive, base, list); err != nil {
		return err
	}
	deb := filepath.Join(out, fmt.Sprintf("palaver_%s_%s.deb", version, arch))
	if err := writeDeb(deb, version, arch, root, list); err != nil {
		return err
	}
	return writeSums(filepath.Join(out, "SHA256SUMS"), archive, deb)
}

// describe runs the binary for its version and the help text of every command.
func describe(binary string) (string, []byte, error) {
	v, err := exec.Command(binary, "version").Output()
	if err != nil {
		return "", nil, fmt.Errorf("%s version: %w", binary, err)
	}
	fields := strings.Fields(string(v))
	if len(fields) != 2 {
		return "", nil, fmt.Errorf("%s version: unexpected %q", binary, v)
	}
	var help bytes.Buffer
	for _, args := range [][]string{{"help"}, {"serve", "--help"}, {"cluster", "status", "--help"}, {"cluster", "help"},
		{"backup", "--help"}, {"restore", "--help"}, {"login", "--help"}, {"verify", "--help"}, {"bench", "--help"}} {
		fmt.Fprintf(&help, "$ palaver %s\n\n", strings.Join(args, " "))
		cmd := exec.Command(binary, args...)
		cmd.Stdout, cmd.Stderr = &help, &help
		if err := cmd.Run(); err != nil {
			return "", nil, fmt.Errorf("palaver %s: %w", strings.Join(args, " "), err)
		}
		help.WriteString("\n")
	}
	return fields[1], help.Bytes(), nil
}

func writeArchive(path, base string, list []file) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	for _, fl := range list {
		data, err := os.ReadFile(fl.src)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: base + "/" + fl.archive, Mode: int64(fl.mode), Size: int64(len(data)),
			ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	for _, c := range []io.Closer{tw, gz, f} {
		if err := c.Close(); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil
}

func writeDeb(path, version, arch, root string, list []file) error {
	var contents files.Contents
	for _, fl := range list {
		c := &files.Content{Source: fl.src, Destination: fl.pkg, FileInfo: &files.ContentFileInfo{Mode: fl.mode}}
		if fl.config {
			c.Type = files.TypeConfigNoReplace
			c.FileInfo.Group = "palaver"
		}
		contents = append(contents, c)
	}
	script := func(name string) string { return filepath.Join(root, "deploy/debian", name) }
	info := nfpm.WithDefaults(&nfpm.Info{
		Name: "palaver", Arch: arch, Platform: "linux", Version: version, Section: "net", Priority: "optional",
		Maintainer:  "Palaver <palaver@localhost>",
		Description: "Chat server where identity is a DID: IRC for people, REST and MCP for agents, Raft clusters",
		Homepage:    "https://github.com/palaver-chat/palaver",
		Overridables: nfpm.Overridables{
			Contents: contents,
			Depends:  []string{"adduser"},
			Scripts: nfpm.Scripts{PreInstall: script("preinstall.sh"), PostInstall: script("postinstall.sh"),
				PostRemove: script("postremove.sh")},
		},
	})
	if err := nfpm.PrepareForPackager(info, "deb"); err != nil {
		return fmt.Errorf("deb: %w", err)
	}
	packager, err := nfpm.Get("deb")
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := packager.Package(info, f); err != nil {
		f.Close()
		return fmt.Errorf("deb: %w", err)
	}
	return f.Close()
}

func writeSums(path string, names ...string) error {
	var lines []string
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		lines = append(lines, hex.EncodeToString(sum[:])+"  "+filepath.Base(name))
	}
	sort.Strings(lines)
	return os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}
