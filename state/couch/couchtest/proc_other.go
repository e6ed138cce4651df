//go:build !linux

package couchtest

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
