package pb

// ResultTo is where the results of s go: ReplyTo, or the owner when it is not set.
func (s *TaskSpec) ResultTo() *PID {
	if s.ReplyTo != nil {
		return s.ReplyTo
	}
	return s.Owner
}
