package reports

import "github.com/llmbench/llmbench/metrics"

// eachOf adapts a slice of Records to the iteration WriteCSV and SampleRecords take.
func eachOf(recs []metrics.Record) func(fn func(*metrics.Record) error) error {
	return func(fn func(*metrics.Record) error) error {
		for i := range recs {
			if err := fn(&recs[i]); err != nil {
				return err
			}
		}
		return nil
	}
}
