package rawsock

// WriteThenReader is a connection that writes a request and reads its
// answer in one wait: *Conn on Unix. A client that writes a request whole
// and then reads its answer can hold the request until its first read and
// write it there (see Conn.WriteThenRead).
type WriteThenReader interface {
	WriteThenRead(w, r []byte) (sent, n int, err error)
}
