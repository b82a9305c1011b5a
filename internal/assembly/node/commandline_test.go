package node

import "testing"

// A job's entrypoint is the driver's command line as a shell takes it back.
func TestCommandLine(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want string
	}{
		{[]string{"/bin/driver", "-rows", "100", "--out=/tmp/x"}, "/bin/driver -rows 100 --out=/tmp/x"},
		{[]string{"./drv", "a b", "", "it's"}, `./drv 'a b' '' 'it'\''s'`},
		{[]string{"d", "$HOME", "x;y"}, `d '$HOME' 'x;y'`},
	} {
		if got := commandLine(c.argv); got != c.want {
			t.Errorf("commandLine(%q) = %s, want %s", c.argv, got, c.want)
		}
	}
}
