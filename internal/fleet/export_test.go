package fleet

// Routes returns the method and path of every route the fleet's mux
// registers from its table.
func Routes() [][2]string {
	var out [][2]string
	for _, r := range routes {
		out = append(out, [2]string{r.method, r.path})
	}
	return out
}
