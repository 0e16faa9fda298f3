//go:build !unix

package engine

import (
	"errors"
	"os/exec"
	"syscall"
)

var errNoProcessGroups = errors.New("the process engine needs process groups (a Unix system)")

func setProcessGroup(*exec.Cmd) {}

func signalGroup(int, syscall.Signal) error { return errNoProcessGroups }

func groupAlive(int) bool { return false }

func processAlive(int) bool { return false }
