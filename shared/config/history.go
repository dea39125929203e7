package config

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// History is how long each tier of the history keeps its points (docs/environment.md
// and docs/data-model.md): every sample, then 5-minute buckets,
// then 1-hour buckets. Every service reads it: the collectors trim by it,
// the edge reads a window's range by it.
type History struct {
	// RawRetention keeps every sample (HISTORY_RAW_RETENTION).
	RawRetention time.Duration `env:"RAW_RETENTION" doc:"How long the history keeps every sample (the 24h window reads it)." envDefault:"48h" min:"1h" max:"168h"`
	// FiveMinRetention keeps the 5-minute buckets (HISTORY_5M_RETENTION).
	FiveMinRetention time.Duration `env:"5M_RETENTION" doc:"How long the history keeps 5-minute buckets (the 7d and 30d windows read them)." envDefault:"720h" min:"24h" max:"2160h"`
	// HourRetention keeps the 1-hour buckets (HISTORY_1H_RETENTION).
	HourRetention time.Duration `env:"1H_RETENTION" doc:"How long the history keeps 1-hour buckets (the 1y and all windows read them)." envDefault:"17520h" min:"168h" max:"87600h"`
}

// validate checks what the bounds cannot: a coarser tier keeps at least
// as long as a finer one, or the past would thin out before it coarsens.
func (h History) validate() error {
	var errs []error
	if h.FiveMinRetention < h.RawRetention {
		errs = append(errs, fmt.Errorf("HISTORY_5M_RETENTION: %s is shorter than HISTORY_RAW_RETENTION %s", h.FiveMinRetention, h.RawRetention))
	}
	if h.HourRetention < h.FiveMinRetention {
		errs = append(errs, fmt.Errorf("HISTORY_1H_RETENTION: %s is shorter than HISTORY_5M_RETENTION %s", h.HourRetention, h.FiveMinRetention))
	}
	return errors.Join(errs...)
}

// LogValue logs the retentions readably.
func (h History) LogValue() slog.Value {
	return slog.GroupValue(slog.String("raw_retention", h.RawRetention.String()),
		slog.String("5m_retention", h.FiveMinRetention.String()), slog.String("1h_retention", h.HourRetention.String()))
}
