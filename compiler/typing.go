package compiler

func findInput(ins []*inputAST, name string) *inputAST {
	for _, in := range ins {
		if in.Name == name {
			return in
		}
	}
	return nil
}

func findOutput(outs []*outputAST, name string) *outputAST {
	for _, o := range outs {
		if o.Name == name {
			return o
		}
	}
	return nil
}

func inputNames(ins []*inputAST) []string {
	out := make([]string, len(ins))
	for i, in := range ins {
		out[i] = in.Name
	}
	return out
}

func outputNames(outs []*outputAST) []string {
	out := make([]string, len(outs))
	for i, o := range outs {
		out[i] = o.Name
	}
	return out
}

// stepInputNames lists the inputs a step has: its component's, or for an
// inline step the ones it binds.
func stepInputNames(s *stepAST) []string {
	if s.Component.Inline {
		return inputNames(s.Inputs)
	}
	return inputNames(s.Component.Inputs)
}

// pipelineInputType is a pipeline input's declared type, else the type of
// its value ("" when nothing says).
func pipelineInputType(in *inputAST) string {
	if in.Type != "" {
		return in.Type
	}
	if v := in.Value; v != nil {
		switch {
		case v.Type != "":
			return v.Type
		case v.Lit != nil:
			return literalType(v.Lit)
		case v.Asset != nil:
			return v.Asset.Type
		case v.Path != nil:
			return "uri_folder"
		}
	}
	if in.Default != nil {
		return literalType(in.Default)
	}
	return ""
}

// stepInputType is the type of a step's input: declared by its component,
// or inferred from what an inline step binds to it.
func stepInputType(pl *pipelineAST, steps map[string]*stepAST, s *stepAST, name string, depth int) string {
	if !s.Component.Inline {
		if d := findInput(s.Component.Inputs, name); d != nil {
			return d.Type
		}
		return ""
	}
	in := findInput(s.Inputs, name)
	if in == nil || in.Value == nil || depth > len(steps)+1 {
		return ""
	}
	v := in.Value
	switch {
	case in.Type != "":
		return in.Type
	case v.Lit != nil:
		return literalType(v.Lit)
	case v.Asset != nil:
		return v.Asset.Type
	case v.Path != nil:
		return "uri_folder"
	case v.Ref == nil:
		return ""
	}
	switch v.Ref.Kind {
	case refParentInput:
		if pi := findInput(pl.Inputs, v.Ref.Name); pi != nil {
			return pipelineInputType(pi)
		}
	case refStepOutput:
		if t, ok := steps[v.Ref.Step]; ok {
			if v.Ref.Name == "artifacts" {
				return "uri_folder"
			}
			return stepOutputTypes(t)[v.Ref.Name]
		}
	case refStepInput:
		if t, ok := steps[v.Ref.Step]; ok {
			return stepInputType(pl, steps, t, v.Ref.Name, depth+1)
		}
	}
	return ""
}
