package bus

// VerifiedCount is how many signatures b remembers as verified.
func VerifiedCount(b *Bus) int {
	b.verified.mu.Lock()
	defer b.verified.mu.Unlock()
	return len(b.verified.ok)
}
