package syntax

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseIPListKeepsValidEntriesAsWrittenAndDropsInvalidOnes(t *testing.T) {
	tests := []struct {
		name        string
		in          string
		wantValid   []string
		wantInvalid []string
		wantErr     error
	}{
		{"mixed IPs and CIDRs as written", "192.168.1.0 2001:0db8:85a3:0000:0000:8a2e:0370:7334 172.16.14.10/24 2001:DB8::1 64:ff9b::192.168.0.1",
			[]string{"192.168.1.0", "2001:0db8:85a3:0000:0000:8a2e:0370:7334", "172.16.14.10/24", "2001:DB8::1", "64:ff9b::192.168.0.1"}, nil, nil},
		{"inner blanks", "10.0.0.1  \t10.0.0.0/8", []string{"10.0.0.1", "10.0.0.0/8"}, nil, nil},
		{"invalid entries dropped", "10.0.0.1 10.0.0.300 example.com 10.0.0.0/8", []string{"10.0.0.1", "10.0.0.0/8"}, []string{"10.0.0.300", "example.com"}, nil},
		{"zone is invalid", "fe80::1%eth0", nil, []string{"fe80::1%eth0"}, nil},
		{"leading zeros are invalid", "010.0.0.1", nil, []string{"010.0.0.1"}, nil},
		{"prefix too long", "192.168.10.5/64 2600:14a0::/256", nil, []string{"192.168.10.5/64", "2600:14a0::/256"}, nil},
		{"leading and trailing blanks ignore the list", " 192.168.1.0/24\t2001:DB8::1 ", nil, nil, ErrIPListBlanks},
		{"trailing newline ignores the list", "10.0.0.1\n", nil, nil, ErrIPListBlanks},
		{"blank", "  ", nil, nil, ErrIPListEmpty},
		{"empty", "", nil, nil, ErrIPListEmpty},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			valid, invalid, err := ParseIPList(tt.in)
			if !errors.Is(err, tt.wantErr) || !reflect.DeepEqual(valid, tt.wantValid) || !reflect.DeepEqual(invalid, tt.wantInvalid) {
				t.Errorf("ParseIPList(%q) = %q, %q, %v; want %q, %q, %v", tt.in, valid, invalid, err, tt.wantValid, tt.wantInvalid, tt.wantErr)
			}
		})
	}
}

// FuzzParseIPListValidEntriesAreSafeWords checks the promise callers rely
// on to write entries into haproxy.config unquoted.
func FuzzParseIPListValidEntriesAreSafeWords(f *testing.F) {
	for _, s := range []string{"10.0.0.1", "::ffff:1.2.3.4/120", "fe80::1%eth0", "1.2.3.4#x", "a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		valid, _, _ := ParseIPList(s)
		for _, v := range valid {
			if strings.Trim(v, "0123456789abcdefABCDEF.:/") != "" {
				t.Errorf("valid entry %q has other characters", v)
			}
		}
	})
}
