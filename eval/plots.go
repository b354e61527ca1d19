package eval

// The figures of an evaluation (issue 35, part 5): test RMSE and runtime
// against the ratio with the legend beside the data, not over it, and a
// dozen methods told apart by colour, glyph and dash together; and the
// forest plot of a paired study, each method's paired RMSE difference
// from a reference with its 95% interval and Holm-corrected p-value.

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// palette is 12 colours that stay apart on screen and paper (Tableau's
// "tab10", then black and olive); methods past 12 repeat a colour with
// another glyph (8 glyphs: 24 distinct pairs).
var palette = []color.Color{
	rgb(0x1f77b4), rgb(0xff7f0e), rgb(0x2ca02c), rgb(0xd62728), rgb(0x9467bd), rgb(0x8c564b),
	rgb(0xe377c2), rgb(0x7f7f7f), rgb(0xbcbd22), rgb(0x17becf), rgb(0x000000), rgb(0x556b2f),
}

func rgb(v uint32) color.Color {
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 255}
}

// methodStyle is method i's colour, glyph and dash pattern.
func methodStyle(i int) (color.Color, draw.GlyphDrawer, []vg.Length) {
	return palette[i%len(palette)], plotutil.Shape(i % len(plotutil.DefaultGlyphShapes)), plotutil.Dashes(i % len(plotutil.DefaultDashes))
}

// legendBeside draws p on a PNG canvas of width w (at least) and height h
// (at least, more when the legend needs it), with leg in a column to the
// right of the plot, top-aligned with the data, and writes it to out.
func legendBeside(out io.Writer, p *plot.Plot, leg plot.Legend, w, h vg.Length) error {
	leg.Top, leg.Left = true, true
	pad := vg.Points(8)
	legRect := leg.Rectangle(draw.Canvas{})
	legW := legRect.Size().X + 2*pad
	if need := legRect.Size().Y + 2*pad + vg.Points(30); h < need {
		h = need
	}
	c, err := draw.NewFormattedCanvas(w+legW, h, "png")
	if err != nil {
		return err
	}
	dc := draw.New(c)
	p.Draw(draw.Crop(dc, 0, -legW, 0, 0))
	titleH := vg.Length(0)
	if p.Title.Text != "" {
		titleH = p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
	}
	leg.Draw(draw.Crop(dc, w+pad, -pad, 0, -titleH-pad))
	_, err = c.WriteTo(out)
	return err
}

// plot draws one line with error bars per method against the ratio in %,
// the legend to the right of the data.
func (s Summary) plot(w io.Writer, title, ylabel string, val func(Cell) (float64, float64)) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "augmentation (% of |train|)"
	p.Y.Label.Text = ylabel
	leg := plot.NewLegend()
	leg.TextStyle.Font.Size = vg.Points(10)
	var ticks []plot.Tick
	for _, q := range s.Ratios {
		ticks = append(ticks, plot.Tick{Value: 100 * q, Label: strconv.FormatFloat(100*q, 'g', 4, 64)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	// Methods sit side by side around each ratio so error bars stay apart.
	spread := 0.0
	if len(s.Ratios) > 1 {
		spread = 100 * (s.Ratios[len(s.Ratios)-1] - s.Ratios[0]) / float64(len(s.Ratios)-1) * 0.3
	}
	// Ratio 0 is every method's one shared run (no augmentation): it is
	// drawn once, in black, where every line starts.
	for i, m := range s.Methods {
		pts := make(plotter.XYs, len(s.Ratios))
		var bpts plotter.XYs
		var errs plotter.YErrors
		dx := 0.0
		if len(s.Methods) > 1 {
			dx = spread * (float64(i)/float64(len(s.Methods)-1) - 0.5)
		}
		for j, q := range s.Ratios {
			y, sd := val(s.Cells[m][q])
			if q == 0 {
				pts[j] = plotter.XY{X: 0, Y: y}
				continue
			}
			pts[j] = plotter.XY{X: 100*q + dx, Y: y}
			bpts = append(bpts, pts[j])
			errs = append(errs, struct{ Low, High float64 }{sd, sd})
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		points, err := plotter.NewScatter(bpts)
		if err != nil {
			return err
		}
		col, shape, dashes := methodStyle(i)
		line.Color, points.Color, points.Shape, line.Dashes = col, col, shape, dashes
		points.Radius = vg.Points(3)
		bars, err := plotter.NewYErrorBars(struct {
			plotter.XYs
			plotter.YErrors
		}{bpts, errs})
		if err != nil {
			return err
		}
		bars.Color = col
		p.Add(line, points, bars)
		leg.Add(m, line, points)
	}
	if len(s.Methods) > 0 && len(s.Ratios) > 0 && s.Ratios[0] == 0 {
		y, sd := val(s.Cells[s.Methods[0]][0])
		pt := plotter.XYs{{X: 0, Y: y}}
		bars, err := plotter.NewYErrorBars(struct {
			plotter.XYs
			plotter.YErrors
		}{pt, plotter.YErrors{{Low: sd, High: sd}}})
		if err != nil {
			return err
		}
		dot, err := plotter.NewScatter(pt)
		if err != nil {
			return err
		}
		dot.Shape, dot.Radius, dot.Color = draw.CircleGlyph{}, vg.Points(3.5), color.Black
		p.Add(bars, dot)
		leg.Add("no augmentation (all)", dot)
	}
	p.Add(plotter.NewGrid())
	return legendBeside(w, p, leg, 7*vg.Inch, 4.5*vg.Inch)
}

// forestName is the file of the forest plot against ref at ratio q.
func forestName(ref string, q float64) string {
	var b strings.Builder
	for _, r := range strings.ToLower(ref) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.':
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
	}
	return fmt.Sprintf("forest-%s-%s.png", b.String(), strconv.FormatFloat(100*q, 'g', 4, 64))
}

// family is the comparisons with one reference at one ratio.
type family struct {
	ref   string
	ratio float64
	cs    []Comparison
}

// families groups cs (Results.Compare's order) by reference and ratio.
func families(cs []Comparison) []family {
	var out []family
	for _, c := range cs {
		if n := len(out); n == 0 || out[n-1].ref != c.Reference || out[n-1].ratio != c.Ratio {
			out = append(out, family{ref: c.Reference, ratio: c.Ratio})
		}
		out[len(out)-1].cs = append(out[len(out)-1].cs, c)
	}
	return out
}

// forestRows are the rows of a forest plot that have a mean difference:
// Y the row, X the mean, and the interval as distances from it.
type forestRows struct {
	plotter.XYs
	plotter.XErrors
}

// forest draws f as a forest plot: one row per method, sorted by the mean
// paired difference (best, most negative, on top), its 95% interval as a
// bar, a line at 0, and each row's Holm-corrected p-value and number of
// splits in a column on the right. Rows significant at Holm p < 0.01 are
// filled (blue when better than the reference, red when worse); the others
// are grey rings. A method with fewer than 2 paired splits has no
// interval; one with none no point.
func forest(w io.Writer, f family) error {
	cs := append([]Comparison(nil), f.cs...)
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i].Diff, cs[j].Diff
		if math.IsNaN(b) {
			return !math.IsNaN(a)
		}
		return a < b
	})
	n := len(cs)
	names := make([]string, n)
	for i, c := range cs {
		names[n-1-i] = c.Method
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Test RMSE difference from %s at %s%% (paired, 95%% CI)", f.ref, strconv.FormatFloat(100*f.ratio, 'g', 4, 64))
	p.X.Label.Text = "method − " + f.ref + " test RMSE (negative: better)"
	if n > 0 {
		p.NominalY(names...)
	}
	p.Add(plotter.NewGrid())
	groups := map[string]*forestRows{"better": {}, "worse": {}, "ns": {}, "noci": {}}
	lo, hi := 0.0, 0.0
	for i, c := range cs {
		y := float64(n - 1 - i)
		if math.IsNaN(c.Diff) || math.IsInf(c.Diff, 0) {
			continue
		}
		lo, hi = math.Min(lo, c.Diff), math.Max(hi, c.Diff)
		g := "ns"
		switch {
		case math.IsNaN(c.Lo) || math.IsNaN(c.Hi) || math.IsInf(c.Lo, 0) || math.IsInf(c.Hi, 0):
			g = "noci"
		case c.PHolm < 0.01 && c.Diff < 0:
			g = "better"
		case c.PHolm < 0.01:
			g = "worse"
		}
		r := groups[g]
		r.XYs = append(r.XYs, plotter.XY{X: c.Diff, Y: y})
		if g == "noci" {
			r.XErrors = append(r.XErrors, struct{ Low, High float64 }{0, 0})
			continue
		}
		r.XErrors = append(r.XErrors, struct{ Low, High float64 }{c.Diff - c.Lo, c.Hi - c.Diff})
		lo, hi = math.Min(lo, c.Lo), math.Max(hi, c.Hi)
	}
	span := hi - lo
	if !(span > 0) { // no row with a difference other than 0 (e.g. one split each)
		span = 1e-3
	}
	p.X.Min, p.X.Max = lo-0.05*span, hi+0.05*span
	zero, err := plotter.NewLine(plotter.XYs{{X: 0, Y: -0.5}, {X: 0, Y: float64(n) - 0.5}})
	if err != nil {
		return err
	}
	zero.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	zero.Color = color.Gray{Y: 80}
	p.Add(zero)
	styles := []struct {
		group string
		col   color.Color
		shape draw.GlyphDrawer
	}{
		{"ns", color.Gray{Y: 110}, draw.RingGlyph{}},
		{"noci", color.Gray{Y: 110}, draw.RingGlyph{}},
		{"worse", rgb(0xd62728), draw.CircleGlyph{}},
		{"better", rgb(0x1f77b4), draw.CircleGlyph{}},
	}
	for _, st := range styles {
		r := groups[st.group]
		if len(r.XYs) == 0 {
			continue
		}
		if st.group != "noci" {
			bars, err := plotter.NewXErrorBars(r)
			if err != nil {
				return err
			}
			bars.Color, bars.LineStyle.Width = st.col, vg.Points(1.5)
			p.Add(bars)
		}
		pts, err := plotter.NewScatter(r.XYs)
		if err != nil {
			return err
		}
		pts.GlyphStyle = draw.GlyphStyle{Color: st.col, Radius: vg.Points(3.5), Shape: st.shape}
		p.Add(pts)
	}
	// The p-value column, right of the plot, row by row.
	label := p.Y.Tick.Label
	label.XAlign = draw.XLeft
	label.YAlign = draw.YCenter
	p.Title.Padding = vg.Points(14) // room for the column's header
	pW := label.Rectangle("p Holm  ").Size().X + label.Rectangle("<1e-4").Size().X
	colW := pW + label.Rectangle("n 100").Size().X + vg.Points(20)
	width := 7.5 * vg.Inch
	height := vg.Points(float64(16*max(n, 1))) + 1.4*vg.Inch
	c, err := draw.NewFormattedCanvas(width, height, "png")
	if err != nil {
		return err
	}
	dc := draw.New(c)
	plotC := draw.Crop(dc, vg.Points(8), -colW, vg.Points(4), -vg.Points(4))
	p.Draw(plotC)
	data := p.DataCanvas(plotC)
	_, ty := p.Transforms(&data)
	px := width - colW + vg.Points(12)
	nx := px + pW
	top := ty(float64(n)-0.5) + vg.Points(9)
	dc.FillText(label, vg.Point{X: px, Y: top}, "p Holm")
	dc.FillText(label, vg.Point{X: nx, Y: top}, "n")
	for i, cmp := range cs {
		pv := "–"
		if !math.IsNaN(cmp.PHolm) {
			pv = fmtP(cmp.PHolm)
		}
		sty := label
		if cmp.PHolm < 0.01 { // in the row's colour
			sty.Color = rgb(0xd62728)
			if cmp.Diff < 0 {
				sty.Color = rgb(0x1f77b4)
			}
		}
		y := ty(float64(n - 1 - i))
		dc.FillText(sty, vg.Point{X: px, Y: y}, pv)
		dc.FillText(label, vg.Point{X: nx, Y: y}, strconv.Itoa(cmp.N))
	}
	_, err = c.WriteTo(w)
	return err
}

// fmtP formats a p-value in 3 significant digits, small ones as "<1e-4".
func fmtP(p float64) string {
	if p < 1e-4 {
		return "<1e-4"
	}
	return strconv.FormatFloat(p, 'g', 3, 64)
}
