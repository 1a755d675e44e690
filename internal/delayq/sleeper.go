package delayq

import "time"

// SleepUntil waits on s until when, returning at once when it has passed.
// It fails once the sleeper is closed.
func (s *Sleeper) SleepUntil(when time.Time) error {
	d := time.Until(when)
	if d <= 0 {
		return nil
	}
	return s.sleep(d)
}
