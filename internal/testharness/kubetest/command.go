package kubetest

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/spoc-project/spoc/internal/testharness/kubenode"
)

// SpocCommand maps every container to spoc's own binary at spoc: a
// container without a command stands for a server image whose entrypoint is
// the OpenAI-compatible server (vllm/vllm-openai), so its args are given to
// `spoc sim serve` bound to the pod IP; a container whose command starts
// with "spoc" (the spoc image, a load Job) runs that command with spoc's
// path. Anything else cannot run on this node.
func SpocCommand(spoc string) kubenode.CommandFunc {
	return func(pod *corev1.Pod, c *corev1.Container, ip string) ([]string, error) {
		if len(c.Command) == 0 {
			argv := append([]string{spoc, "sim", "serve"}, c.Args...)
			return append(argv, "--host", ip), nil
		}
		if c.Command[0] == "spoc" || strings.HasSuffix(c.Command[0], "/spoc") {
			argv := append([]string{spoc}, c.Command[1:]...)
			return append(argv, c.Args...), nil
		}
		return nil, fmt.Errorf("image %s, command %q: this node runs spoc only", c.Image, c.Command)
	}
}
