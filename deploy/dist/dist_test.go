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
	dir, deb := buildPackage(t)
	run := func(name string, args ...string) string {
		t.Helper()
		return runOK(t, name, args...)
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
		"./usr/share/doc/palaver/palaver.txt", "./usr/share/doc/palaver/operations.md", "./usr/share/doc/palaver/cluster.md",
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

// buildPackage builds the release files from a fresh binary into a temporary directory and
// returns that directory and the Debian package. It skips without dpkg-deb.
func buildPackage(t *testing.T) (dir, deb string) {
	t.Helper()
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skip("dpkg-deb is not installed")
	}
	dir = t.TempDir()
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
	return dir, debs[0]
}

// runOK runs a command and returns its output, failing the test if it fails.
func runOK(t *testing.T, name string, args ...string) string {
	t.Helper()
	b, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, b)
	}
	return string(b)
}

// TestInstall installs the package with dpkg into a scratch root (dpkg --root, the maintainer
// scripts run without chroot and see the root in DPKG_ROOT), then checks what an installation
// leaves: the system user in the root's /etc/passwd (and none on this machine), the files and
// their modes, dpkg's own record and --verify, a configuration file edited by the operator kept
// across a reinstallation, the unit verified by systemd-analyze, and a purge that removes the
// package's files. It needs root (dpkg --root and useradd --prefix write as root).
func TestInstall(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("installing with dpkg --root needs root")
	}
	for _, tool := range []string{"dpkg", "useradd"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	hostUser := exec.Command("getent", "passwd", "palaver").Run() == nil
	dir, deb := buildPackage(t)
	root := filepath.Join(dir, "root")
	// An empty system: the account files useradd --prefix edits and an empty dpkg database.
	for name, data := range map[string]string{
		"etc/passwd":             "root:x:0:0:root:/root:/bin/sh\n",
		"etc/group":              "root:x:0:\n",
		"etc/shadow":             "root:*:19000:0:99999:7:::\n",
		"etc/gshadow":            "root:*::\n",
		"var/lib/dpkg/status":    "",
		"var/lib/dpkg/available": "",
	} {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"var/lib/dpkg/info", "var/lib/dpkg/updates"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// --force-depends: the scratch root has no adduser package (the scripts use useradd there).
	dpkg := func(args ...string) string {
		t.Helper()
		return runOK(t, "dpkg", append([]string{"--root=" + root, "--force-script-chrootless", "--force-depends", "--log=/dev/null"}, args...)...)
	}
	dpkg("-i", deb)

	passwd, _ := os.ReadFile(filepath.Join(root, "etc/passwd"))
	if !strings.Contains(string(passwd), "palaver:x:") || !strings.Contains(string(passwd), ":/var/lib/palaver:/usr/sbin/nologin") {
		t.Errorf("no system user palaver with home /var/lib/palaver in the root:\n%s", passwd)
	}
	if group, _ := os.ReadFile(filepath.Join(root, "etc/group")); !strings.Contains(string(group), "palaver:x:") {
		t.Errorf("no group palaver in the root:\n%s", group)
	}
	if !hostUser && exec.Command("getent", "passwd", "palaver").Run() == nil {
		t.Errorf("the installation into a scratch root created the user palaver on this machine")
	}
	for path, mode := range map[string]os.FileMode{
		"usr/bin/palaver":                     0o755,
		"etc/palaver/palaver.conf":            0o640,
		"lib/systemd/system/palaver.service":  0o644,
		"usr/share/doc/palaver/palaver.txt":   0o644,
		"usr/share/doc/palaver/operations.md": 0o644,
	} {
		info, err := os.Stat(filepath.Join(root, path))
		if err != nil {
			t.Errorf("installed files: %v", err)
			continue
		}
		if info.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v", path, info.Mode().Perm(), mode)
		}
	}
	if status := dpkg("-s", "palaver"); !strings.Contains(status, "Status: install ok installed") {
		t.Errorf("dpkg -s palaver:\n%s", status)
	}
	if out := dpkg("--verify", "palaver"); strings.TrimSpace(out) != "" {
		t.Errorf("dpkg --verify palaver: %s", out)
	}
	installed := filepath.Join(root, "usr/bin/palaver")
	conf := filepath.Join(root, "etc/palaver/palaver.conf")
	if help := runOK(t, installed, "serve", "--config", conf, "--help"); !strings.Contains(help, "-cluster-secret") {
		t.Errorf("installed palaver serve --help: %q", help)
	}

	// The operator's configuration survives a reinstallation (a conffile, kept with --force-confold).
	edited := "server-name = chat.example.org\nnode-name = node-a\n"
	if err := os.WriteFile(conf, []byte(edited), 0o640); err != nil {
		t.Fatal(err)
	}
	dpkg("--force-confold", "-i", deb)
	if got, _ := os.ReadFile(conf); string(got) != edited {
		t.Errorf("reinstallation replaced the edited configuration:\n%s", got)
	}

	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Log("systemd-analyze is not installed: the installed unit is not verified")
	} else {
		unit, err := os.ReadFile(filepath.Join(root, "lib/systemd/system/palaver.service"))
		if err != nil {
			t.Fatal(err)
		}
		check := filepath.Join(dir, "installed-palaver.service")
		if err := os.WriteFile(check, []byte(strings.ReplaceAll(string(unit), "/usr/bin/palaver", installed)), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("systemd-analyze", "verify", check).CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
			t.Errorf("systemd-analyze verify of the installed unit: %v\n%s", err, out)
		}
	}

	dpkg("--purge", "palaver")
	for _, path := range []string{"usr/bin/palaver", "etc/palaver/palaver.conf", "lib/systemd/system/palaver.service"} {
		if _, err := os.Stat(filepath.Join(root, path)); !os.IsNotExist(err) {
			t.Errorf("after purge %s: %v", path, err)
		}
	}
	if out, err := exec.Command("dpkg", "--root="+root, "-s", "palaver").CombinedOutput(); err == nil {
		t.Errorf("dpkg -s palaver after purge:\n%s", out)
	}
}
