// Package tpe defines its New and may call it.
package tpe

type Sampler struct{}

func New() *Sampler { return &Sampler{} }

func twice() []*Sampler { return []*Sampler{New(), New()} }
