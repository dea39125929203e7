package config

import (
	"strings"
	"testing"
	"time"
)

func TestHistoryRetention(t *testing.T) {
	c, err := LoadCommon()
	if err != nil {
		t.Fatal(err)
	}
	if h := c.History; h.RawRetention != 48*time.Hour || h.FiveMinRetention != 30*24*time.Hour || h.HourRetention != 730*24*time.Hour {
		t.Errorf("default retentions = %+v", h)
	}
	t.Setenv("HISTORY_RAW_RETENTION", "24h")
	t.Setenv("HISTORY_1H_RETENTION", "8760h")
	c, err = LoadCommon()
	if err != nil || c.History.RawRetention != 24*time.Hour || c.History.HourRetention != 365*24*time.Hour {
		t.Errorf("overridden = %+v, %v", c.History, err)
	}
	for _, tc := range []struct{ key, value, want string }{
		{"HISTORY_RAW_RETENTION", "0s", "HISTORY_RAW_RETENTION: 0s is below the minimum 1h"},
		{"HISTORY_RAW_RETENTION", "200h", "HISTORY_RAW_RETENTION: 200h0m0s is above the maximum 168h"},
		{"HISTORY_5M_RETENTION", "12h", "HISTORY_5M_RETENTION: 12h0m0s is below the minimum 24h"},
		{"HISTORY_1H_RETENTION", "100000h", "HISTORY_1H_RETENTION: 100000h0m0s is above the maximum 87600h"},
		{"HISTORY_5M_RETENTION", "30h", "HISTORY_5M_RETENTION: 30h0m0s is shorter than HISTORY_RAW_RETENTION 48h"},
		{"HISTORY_5M_RETENTION", "", "HISTORY_5M_RETENTION is set but empty"},
	} {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			t.Setenv("HISTORY_RAW_RETENTION", "48h")
			t.Setenv("HISTORY_1H_RETENTION", "17520h")
			t.Setenv(tc.key, tc.value)
			_, err := LoadCommon()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v does not say %q", err, tc.want)
			}
		})
	}
}
