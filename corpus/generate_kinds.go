package corpus

import (
	"fmt"
	"strings"
)

var goTypes = []string{"int", "int64", "string", "bool", "float64", "[]byte", "time.Duration", "error", "[]string", "map[string]int", "*Config", "context.Context", "uint64", "io.Reader"}
var goImports = []string{"context", "errors", "fmt", "io", "net/http", "os", "sort", "strconv", "strings", "sync", "time", "encoding/json", "path/filepath", "log/slog"}
var pyTypes = []string{"int", "str", "bool", "float", "list[str]", "dict[str, int]", "bytes", "Optional[str]"}

func (g *gen) goType() string { return g.pick(goTypes) }

func (g *gen) goExpr(vars []string) string {
	v := g.pick(vars)
	switch g.r.IntN(7) {
	case 0:
		return fmt.Sprintf("len(%s)", v)
	case 1:
		return fmt.Sprintf("%s.%s()", v, g.funcName(true))
	case 2:
		return fmt.Sprintf("%s + %d", v, g.between(1, 512))
	case 3:
		return fmt.Sprintf("%q", g.noun()+" "+g.verb()+"ed")
	case 4:
		return fmt.Sprintf("%s(%s, %s)", g.funcName(false), v, g.pick(vars))
	case 5:
		return fmt.Sprintf("strings.TrimSpace(%s)", v)
	default:
		return v
	}
}

func (g *gen) goStmt(indent string, vars []string, depth int) {
	switch k := g.r.IntN(9); {
	case k == 0 && depth < 2:
		fmt.Fprintf(&g.b, "%sif %s == nil {\n", indent, g.pick(vars))
		fmt.Fprintf(&g.b, "%s\treturn fmt.Errorf(\"%s %s: %%w\", err)\n", indent, g.verb(), g.noun())
		fmt.Fprintf(&g.b, "%s}\n", indent)
	case k == 1 && depth < 2:
		it := g.snake()
		fmt.Fprintf(&g.b, "%sfor i, %s := range %s {\n", indent, strings.ReplaceAll(it, "_", ""), g.pick(vars))
		for n := g.between(1, 3); n > 0; n-- {
			g.goStmt(indent+"\t", append(vars, "i", strings.ReplaceAll(it, "_", "")), depth+1)
		}
		fmt.Fprintf(&g.b, "%s}\n", indent)
	case k == 2 && depth < 2:
		fmt.Fprintf(&g.b, "%sswitch %s {\n", indent, g.pick(vars))
		for n := g.between(2, 4); n > 0; n-- {
			fmt.Fprintf(&g.b, "%scase %q:\n", indent, g.noun())
			g.goStmt(indent+"\t", vars, depth+1)
		}
		fmt.Fprintf(&g.b, "%s}\n", indent)
	case k == 3:
		fmt.Fprintf(&g.b, "%s// %s\n", indent, g.sentence())
		g.goStmt(indent, vars, depth)
	case k == 4:
		fmt.Fprintf(&g.b, "%s%s, err := %s(ctx, %s)\n", indent, g.ident(false), g.funcName(false), g.pick(vars))
		fmt.Fprintf(&g.b, "%sif err != nil {\n%s\treturn err\n%s}\n", indent, indent, indent)
	case k == 5:
		fmt.Fprintf(&g.b, "%s%s.mu.Lock()\n%sdefer %s.mu.Unlock()\n", indent, vars[0], indent, vars[0])
	case k == 6:
		fmt.Fprintf(&g.b, "%sslog.Debug(%q, %q, %s)\n", indent, g.verb()+" "+g.noun(), g.snake(), g.pick(vars))
	default:
		fmt.Fprintf(&g.b, "%s%s := %s\n", indent, g.ident(false), g.goExpr(vars))
	}
}

func (g *gen) goFile() string {
	fmt.Fprintf(&g.b, "package %s\n\nimport (\n", g.noun())
	for n := g.between(2, 6); n > 0; n-- {
		fmt.Fprintf(&g.b, "\t%q\n", g.pick(goImports))
	}
	g.b.WriteString(")\n\n")
	for t := g.between(1, 3); t > 0; t-- {
		typ := g.ident(true)
		fmt.Fprintf(&g.b, "// %s %s.\ntype %s struct {\n\tmu sync.Mutex\n", typ, strings.TrimSuffix(strings.ToLower(g.sentence()), "."), typ)
		fields := []string{"ctx"}
		for f := g.between(2, 7); f > 0; f-- {
			name := g.ident(true)
			fields = append(fields, "r."+name)
			fmt.Fprintf(&g.b, "\t%s %s `json:\"%s\"`\n", name, g.goType(), g.snake())
		}
		g.b.WriteString("}\n\n")
		for m := g.between(2, 5); m > 0; m-- {
			name := g.funcName(g.chance(0.7))
			arg := g.ident(false)
			fmt.Fprintf(&g.b, "// %s %ss the %s of r.\n", name, g.verb(), g.noun())
			fmt.Fprintf(&g.b, "func (r *%s) %s(ctx context.Context, %s %s) (%s, error) {\n", typ, name, arg, g.goType(), g.goType())
			vars := append(fields, arg)
			for s := g.between(2, 8); s > 0; s-- {
				g.goStmt("\t", vars, 0)
			}
			fmt.Fprintf(&g.b, "\treturn %s, nil\n}\n\n", g.goExpr(vars))
		}
	}
	return g.take()
}

func (g *gen) pythonFile() string {
	fmt.Fprintf(&g.b, "\"\"\"%s\"\"\"\n\nfrom __future__ import annotations\n\nimport %s\nfrom typing import Optional\n\n", g.sentence(), g.pick([]string{"os", "json", "logging", "asyncio", "dataclasses"}))
	for c := g.between(1, 3); c > 0; c-- {
		fmt.Fprintf(&g.b, "\nclass %s:\n    \"\"\"%s\"\"\"\n\n", g.ident(true), g.sentence())
		args := []string{g.snake(), g.snake()}
		fmt.Fprintf(&g.b, "    def __init__(self, %s: %s, %s: %s = None) -> None:\n", args[0], g.pick(pyTypes), args[1], g.pick(pyTypes))
		for _, a := range args {
			fmt.Fprintf(&g.b, "        self.%s = %s\n", a, a)
		}
		for m := g.between(2, 5); m > 0; m-- {
			arg := g.snake()
			fmt.Fprintf(&g.b, "\n    def %s_%s(self, %s: %s) -> %s:\n", g.verb(), g.noun(), arg, g.pick(pyTypes), g.pick(pyTypes))
			if g.chance(0.5) {
				fmt.Fprintf(&g.b, "        # %s\n", g.sentence())
			}
			for s := g.between(2, 7); s > 0; s-- {
				switch g.r.IntN(5) {
				case 0:
					fmt.Fprintf(&g.b, "        if not %s:\n            raise ValueError(f\"%s {%s!r}\")\n", arg, g.adj()+" "+g.noun(), arg)
				case 1:
					fmt.Fprintf(&g.b, "        for %s in self.%s:\n            %s.%s(%s)\n", g.noun(), args[0], g.noun(), g.verb(), arg)
				case 2:
					fmt.Fprintf(&g.b, "        logging.info(\"%s %%s\", %s)\n", g.verb()+"ing "+g.noun(), arg)
				case 3:
					fmt.Fprintf(&g.b, "        %s = {\"%s\": %d, \"%s\": self.%s}\n", g.snake(), g.noun(), g.between(0, 9999), g.noun(), args[1])
				default:
					fmt.Fprintf(&g.b, "        %s = self.%s_%s(%s)\n", g.snake(), g.verb(), g.noun(), arg)
				}
			}
			fmt.Fprintf(&g.b, "        return %s\n", arg)
		}
	}
	return g.take()
}

func (g *gen) prose() string {
	if g.chance(0.5) {
		fmt.Fprintf(&g.b, "# %s %s\n\n", title(g.adj()), g.noun())
	}
	for p := g.between(1, 5); p > 0; p-- {
		if g.chance(0.3) {
			for n := g.between(2, 5); n > 0; n-- {
				fmt.Fprintf(&g.b, "- %s\n", g.sentence())
			}
			g.b.WriteByte('\n')
			continue
		}
		g.paragraph(g.between(60, 100), g.between(2, 7))
	}
	return g.take()
}

func (g *gen) toolOutput() string {
	switch g.r.IntN(5) {
	case 0:
		fmt.Fprintf(&g.b, "$ go test ./%s/...\n", g.noun())
		for n := g.between(3, 15); n > 0; n-- {
			if g.chance(0.25) {
				fmt.Fprintf(&g.b, "--- FAIL: Test%s (%d.%02ds)\n    %s_test.go:%d: got %d, want %d\n", g.funcName(true), g.r.IntN(3), g.r.IntN(100), g.snake(), g.between(10, 900), g.r.IntN(100), g.r.IntN(100))
			} else {
				fmt.Fprintf(&g.b, "ok  \texample.com/%s/%s\t%d.%03ds\n", g.noun(), g.noun(), g.r.IntN(4), g.r.IntN(1000))
			}
		}
	case 1:
		fmt.Fprintf(&g.b, "$ grep -rn %q .\n", g.funcName(false))
		for n := g.between(3, 20); n > 0; n-- {
			fmt.Fprintf(&g.b, "./%s:%d:\t%s := %s(%s)\n", g.path(".go"), g.between(1, 2000), g.ident(false), g.funcName(g.chance(0.5)), g.ident(false))
		}
	case 2:
		g.b.WriteString("Traceback (most recent call last):\n")
		for n := g.between(2, 8); n > 0; n-- {
			fmt.Fprintf(&g.b, "  File \"/srv/app/%s\", line %d, in %s_%s\n    %s = self.%s(%s)\n", g.path(".py"), g.between(1, 900), g.verb(), g.noun(), g.snake(), g.verb(), g.snake())
		}
		fmt.Fprintf(&g.b, "KeyError: '%s'\n", g.snake())
	case 3:
		for n := g.between(5, 25); n > 0; n-- {
			fmt.Fprintf(&g.b, "{\"level\":%q,\"ts\":\"2026-%02d-%02dT%02d:%02d:%02d.%03dZ\",\"msg\":%q,\"%s\":%d,\"%s\":%q}\n",
				g.pick([]string{"info", "debug", "warn", "error"}), g.between(1, 12), g.between(1, 28), g.r.IntN(24), g.r.IntN(60), g.r.IntN(60), g.r.IntN(1000),
				g.verb()+" "+g.adj()+" "+g.noun(), g.snake(), g.r.IntN(100000), g.noun(), fmt.Sprintf("%08x", g.r.Uint32()))
		}
	default:
		fmt.Fprintf(&g.b, "$ ls -la %s\n", g.noun())
		for n := g.between(4, 20); n > 0; n-- {
			fmt.Fprintf(&g.b, "-rw-r--r--  1 dev  staff  %6d Nov %2d %02d:%02d %s\n", g.between(100, 90000), g.between(1, 30), g.r.IntN(24), g.r.IntN(60), g.path(g.pick([]string{".go", ".py", ".yaml", ".md"})))
		}
	}
	return g.take()
}

func (g *gen) diff() string {
	file := g.path(".go")
	fmt.Fprintf(&g.b, "diff --git a/%s b/%s\nindex %07x..%07x 100644\n--- a/%s\n+++ b/%s\n", file, file, g.r.Uint32()>>4, g.r.Uint32()>>4, file, file)
	line := g.between(1, 400)
	for h := g.between(1, 4); h > 0; h-- {
		ctx, del, add := g.between(2, 4), g.between(0, 4), g.between(1, 6)
		fmt.Fprintf(&g.b, "@@ -%d,%d +%d,%d @@ func %s(\n", line, 2*ctx+del, line, 2*ctx+add, g.funcName(true))
		vars := []string{g.ident(false), g.ident(false)}
		emit := func(prefix string, n int) {
			for ; n > 0; n-- {
				fmt.Fprintf(&g.b, "%s\t%s := %s\n", prefix, g.ident(false), g.goExpr(vars))
			}
		}
		emit(" ", ctx)
		emit("-", del)
		emit("+", add)
		emit(" ", ctx)
		line += g.between(20, 200)
	}
	return g.take()
}

func (g *gen) systemPrompt() string {
	fmt.Fprintf(&g.b, "You are a coding assistant working in the %s monorepo. %s\n\n", g.noun(), g.sentence())
	g.b.WriteString("Rules:\n")
	for n := g.between(4, 10); n > 0; n-- {
		fmt.Fprintf(&g.b, "- %s\n", g.sentence())
	}
	g.b.WriteString("\nTools:\n")
	for n := g.between(3, 8); n > 0; n-- {
		fmt.Fprintf(&g.b, "{\"type\": \"function\", \"function\": {\"name\": %q, \"description\": %q, \"parameters\": {\"type\": \"object\", \"properties\": {\"%s\": {\"type\": \"string\"}, \"%s\": {\"type\": \"integer\"}}, \"required\": [\"%s\"]}}}\n",
			g.verb()+"_"+g.noun(), g.sentence(), g.snake(), g.snake(), g.noun())
	}
	return g.take()
}
