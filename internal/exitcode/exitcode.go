// Package exitcode holds rlctl's one table of process exit codes and the
// way an error carries its code up to cli.Main, which alone maps it.
//
// Core packages wrap their errors with a code (for example a Redis that
// cannot be reached is Unreachable); they never call os.Exit.
package exitcode

import (
	"context"
	"errors"
	"fmt"
)

// Code is a process exit status of rlctl.
type Code int

const (
	// OK means everything ran and every check or threshold held.
	OK Code = 0
	// Failed means a check, audit finding or threshold failed. It is an
	// outcome, not a crash: the run itself completed.
	Failed Code = 1
	// Usage means invalid usage or input: flags, a scenario file, a limit.
	Usage Code = 2
	// Unreachable means Redis or the target could not be reached.
	Unreachable Code = 3
	// Interrupted means the run was interrupted (SIGINT).
	Interrupted Code = 130
)

// Table lists every code with its meaning, in order, for help texts.
var Table = []struct {
	Code    Code
	Meaning string
}{
	{OK, "all good"},
	{Failed, "a check, finding or threshold failed"},
	{Usage, "invalid usage or input (flags, scenario file, limit syntax)"},
	{Unreachable, "Redis or the target could not be reached"},
	{Interrupted, "interrupted"},
}

// Coder is implemented by errors that know the exit code they mean.
type Coder interface {
	ExitCode() Code
}

type codedError struct {
	err  error
	code Code
}

func (e *codedError) Error() string  { return e.err.Error() }
func (e *codedError) Unwrap() error  { return e.err }
func (e *codedError) ExitCode() Code { return e.code }

// With returns err carrying code. A nil err stays nil.
func With(err error, code Code) error {
	if err == nil {
		return nil
	}
	return &codedError{err: err, code: code}
}

// Errorf formats an error that carries code.
func Errorf(code Code, format string, args ...any) error {
	return With(fmt.Errorf(format, args...), code)
}

// Of returns the exit code an error means: the outermost Coder's code,
// Interrupted for a cancelled context, and Failed for anything else.
func Of(err error) Code {
	if err == nil {
		return OK
	}
	var c Coder
	if errors.As(err, &c) {
		return c.ExitCode()
	}
	if errors.Is(err, context.Canceled) {
		return Interrupted
	}
	return Failed
}
