package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackage builds the release files from a fresh binary, then checks the Debian package with
// dpkg-deb (its control data, its files and their modes, its configuration file), unpacks it into
// a scratch root, and verifies its systemd unit with systemd-analyze where that is installed.
func TestPackage(t *testing.T) {
	for _, tool := range []string{"dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	dir := t.TempDir()
	binary := filepath.Join(dir, "palaver")
	build := exec.Command("go", "build", "-C", "../..", "-trimpath", "-o", binary, "./cmd/palaver")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out := filepath.Join(dir, "dist")
	if err := buildRelease(binary, "../..", out, "amd64"); err != nil {
		t.Fatal(err)
	}
	debs, _ := filepath.Glob(filepath.Join(out, "palaver_*_amd64.deb"))
	archives, _ := filepath.Glob(filepath.Join(out, "palaver_*_linux_amd64.tar.gz"))
	if len(debs) != 1 || len(archives) != 1 {
		t.Fatalf("release files: %v %v", debs, archives)
	}
	deb := debs[0]
	run := func(name string, args ...string) string {
		t.Helper()
		b, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, b)
		}
		return string(b)
	}

	info := run("dpkg-deb", "-I", deb)
	for _, want := range []string{"Package: palaver", "Architecture: amd64", "Depends: adduser", "preinst", "postinst", "conffiles"} {
		if !strings.Contains(info, want) {
			t.Errorf("dpkg-deb -I lacks %q:\n%s", want, info)
		}
	}
	if conffiles := run("dpkg-deb", "-f", deb, "Package"); strings.TrimSpace(conffiles) != "palaver" {
		t.Errorf("package name %q", conffiles)
	}
	listing := run("dpkg-deb", "-c", deb)
	for _, want := range []string{
		"-rwxr-xr-x root/root", "./usr/bin/palaver",
		"-rw-r----- root/palaver", "./etc/palaver/palaver.conf",
		"./lib/systemd/system/palaver.service",
		"./usr/share/doc/palaver/palaver.txt", "./usr/share/doc/palaver/operations.md",
		"./usr/share/doc/palaver/prometheus/palaver-rules.yml", "./usr/share/doc/palaver/grafana/palaver-dashboard.json",
	} {
		if !strings.Contains(listing, want) {
			t.Errorf("dpkg-deb -c lacks %q:\n%s", want, listing)
		}
	}

	root := filepath.Join(dir, "root")
	run("dpkg-deb", "-x", deb, root)
	control := filepath.Join(dir, "control")
	run("dpkg-deb", "-e", deb, control)
	if conf, err := os.ReadFile(filepath.Join(control, "conffiles")); err != nil || strings.TrimSpace(string(conf)) != "/etc/palaver/palaver.conf" {
		t.Errorf("conffiles %q, %v", conf, err)
	}
	unit, err := os.ReadFile(filepath.Join(root, "lib/systemd/system/palaver.service"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"User=palaver", "StateDirectory=palaver", "NoNewPrivileges=yes", "ProtectSystem=strict",
		"ExecStart=/usr/bin/palaver serve --config /etc/palaver/palaver.conf"} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("unit lacks %q", want)
		}
	}
	// The installed binary runs, and accepts the packaged configuration file.
	installed := filepath.Join(root, "usr/bin/palaver")
	if v := run(installed, "version"); !strings.HasPrefix(v, "palaver ") {
		t.Errorf("palaver version: %q", v)
	}
	help := run(installed, "serve", "--config", filepath.Join(root, "etc/palaver/palaver.conf"), "--help")
	if !strings.Contains(help, "-cluster-secret") {
		t.Errorf("serve --help: %q", help)
	}
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Log("systemd-analyze is not installed: the unit is not verified")
		return
	}
	// Verified with its ExecStart pointing at the unpacked binary (systemd-analyze checks it).
	check := filepath.Join(dir, "palaver.service")
	os.WriteFile(check, []byte(strings.ReplaceAll(string(unit), "/usr/bin/palaver", installed)), 0o644)
	if out, err := exec.Command("systemd-analyze", "verify", check).CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
