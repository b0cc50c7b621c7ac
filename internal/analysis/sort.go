package analysis

import "slices"

// sortTimes sorts s ascending. Large slices of times are spread fairly
// evenly over the run and nearly in order already, so a bucket pass that
// puts each value in its slot by its high bits (in place: the "American
// flag" permutation, no second buffer) and then sorts each small bucket
// beats a comparison sort by several times. A skewed slice (many equal
// times) only makes some buckets big, which fall back on slices.Sort.
func sortTimes(s []int64) {
	if len(s) < flagSortMin {
		slices.Sort(s)
		return
	}
	lo, hi := s[0], s[0]
	for _, v := range s {
		lo, hi = min(lo, v), max(hi, v)
	}
	if lo == hi {
		return
	}
	nb := min(max(len(s)/8, 256), 1<<18)
	span := uint64(hi - lo) // times are clamped to ±2^60: no overflow
	shift := uint(0)
	for span>>shift >= uint64(nb) {
		shift++
	}
	nb = int(span>>shift) + 1
	bucket := func(v int64) int { return int(uint64(v-lo) >> shift) }

	count := make([]int, nb)
	for _, v := range s {
		count[bucket(v)]++
	}
	next := make([]int, nb) // where the next value of each bucket goes
	end := make([]int, nb)
	pos := 0
	for b, c := range count {
		next[b] = pos
		pos += c
		end[b] = pos
	}
	// Cycle each misplaced value to its bucket; every swap settles one
	// value for good, so this is linear.
	for b := range nb {
		for next[b] < end[b] {
			v := s[next[b]]
			for {
				t := bucket(v)
				if t == b {
					break
				}
				s[next[t]], v = v, s[next[t]]
				next[t]++
			}
			s[next[b]] = v
			next[b]++
		}
	}
	start := 0
	for _, c := range count {
		part := s[start : start+c]
		if c <= 96 {
			insertionSort(part)
		} else {
			slices.Sort(part)
		}
		start += c
	}
}

// flagSortMin is the size from which sortTimes buckets.
const flagSortMin = 1 << 11

func insertionSort(s []int64) {
	for i := 1; i < len(s); i++ {
		v := s[i]
		j := i
		for j > 0 && s[j-1] > v {
			s[j] = s[j-1]
			j--
		}
		s[j] = v
	}
}
