package jobfile

import (
	"errors"

	"streamd/core"
	"streamd/core/source"
	"streamd/core/timeparse"
)

// timeKeys are the column keys that say how a timestamp is written
// (format:, time_zone:, unit:), for the sources that read text.
var timeKeys = []string{"format", "time_zone", "unit"}

// timeFormats checks the timestamp settings of cs and returns them by
// column name. zone is the source's time_zone: ("" = UTC), the default of
// columns that give none, found at zoneAt. A column that gives none of
// format, time_zone and unit and has no source zone takes the default
// forms (absent from the result).
func (f *File) timeFormats(cs []Column, zone, zoneAt string) (source.TimeFormats, error) {
	if zone != "" {
		if _, err := timeparse.Zone(zone); err != nil {
			return nil, f.errAt(zoneAt, "%v", err)
		}
	}
	var out source.TimeFormats
	for _, c := range cs {
		if c.Type != core.Timestamp {
			for _, k := range timeKeys {
				if c.Set[k] {
					return nil, f.errAt(c.At+"."+k, "%s applies to timestamp columns; %q is %s", k, c.Name, article(c.Type))
				}
			}
			continue
		}
		z := c.TimeZone
		if z == "" && c.Unit == "" {
			z = zone // epoch numbers have no zone: the source's does not apply
		}
		if c.Format == "" && c.Unit == "" && z == "" {
			continue
		}
		tf, err := timeparse.New(c.Format, c.Unit, z)
		if err != nil {
			var se *timeparse.SettingError
			if errors.As(err, &se) && c.Set[se.Key] {
				return nil, f.errAt(c.At+"."+se.Key, "column %q: %v", c.Name, err)
			}
			return nil, f.errAt(c.At, "column %q: %v", c.Name, err)
		}
		if out == nil {
			out = source.TimeFormats{}
		}
		out[c.Name] = tf
	}
	return out, nil
}
