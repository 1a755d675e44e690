package handover

// LoopQuota is how many sessions loop i of loops may detach in a round with
// room places on the way: the quotas add up to room, since every loop of a
// round puts its sessions on the same queue, and one more than it holds
// would block that loop (and every session on it) on the sender.
func LoopQuota(room, loops, i int) int {
	q := room / loops
	if i < room%loops {
		q++
	}
	return q
}
