package workloads

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/llmbench/llmbench/traces"
)

// probeParam is one parameter of a probe tool; props make it an object, items an array.
type probeParam struct {
	name, typ, desc string
	required        bool
	enum            []string
	props           []probeParam
	items           string
}

type probeTool struct {
	name, desc string
	params     []probeParam
}

func req(name, typ, desc string) probeParam {
	return probeParam{name: name, typ: typ, desc: desc, required: true}
}
func opt(name, typ, desc string) probeParam { return probeParam{name: name, typ: typ, desc: desc} }
func enum(p probeParam, values ...string) probeParam {
	p.enum = values
	return p
}
func object(p probeParam, props ...probeParam) probeParam {
	p.typ, p.props = "object", props
	return p
}
func array(p probeParam, items string) probeParam {
	p.typ, p.items = "array", items
	return p
}

// probeTools is the tool-calling probe's catalog: 20 tools, distinct descriptions (a task
// names its tool by its description), parameters nested up to two levels.
var probeTools = []probeTool{
	{"searchFlights", "Search for flights between two airports", []probeParam{req("origin", "string", "origin airport"), req("destination", "string", "destination airport"), req("departureDate", "string", "departure date"),
		object(req("passengers", "", "passengers"), req("adults", "integer", "adult passengers"), opt("children", "integer", "child passengers")), enum(opt("cabin", "string", "cabin class"), "economy", "business", "first")}},
	{"bookHotel", "Book a hotel room in a city", []probeParam{req("city", "string", "hotel city"), req("checkIn", "string", "check-in date"), req("checkOut", "string", "check-out date"),
		object(req("guests", "", "guests"), req("adults", "integer", "adult guests"), opt("children", "integer", "child guests")), enum(opt("roomType", "string", "room type"), "single", "double", "suite")}},
	{"getWeather", "Get the weather forecast for a city", []probeParam{req("city", "string", "forecast city"), opt("days", "integer", "forecast days"), enum(opt("units", "string", "temperature units"), "celsius", "fahrenheit")}},
	{"getOrderStatus", "Look up the status of an order", []probeParam{req("orderId", "string", "order id"), opt("includeHistory", "boolean", "include history")}},
	{"cancelOrder", "Cancel an existing order", []probeParam{req("orderId", "string", "order to cancel"), req("reason", "string", "cancellation reason"),
		object(opt("refund", "", "refund"), enum(req("method", "string", "refund method"), "card", "credit"), opt("amount", "number", "refund amount"))}},
	{"findCustomer", "Find a customer by email address", []probeParam{req("email", "string", "customer email")}},
	{"listOrders", "List the orders of a customer", []probeParam{req("customerId", "string", "customer id"), enum(opt("status", "string", "order status"), "open", "shipped", "all"), opt("limit", "integer", "most orders")}},
	{"createTicket", "Open a support ticket", []probeParam{req("customerId", "string", "ticket customer"), req("subject", "string", "ticket subject"), enum(req("priority", "string", "ticket priority"), "low", "normal", "high"), array(opt("tags", "", "ticket tags"), "string")}},
	{"sendEmail", "Send an email message", []probeParam{req("to", "string", "recipient"), req("subject", "string", "email subject"), req("body", "string", "email body"), array(opt("cc", "", "copy to"), "string")}},
	{"scheduleMeeting", "Schedule a meeting on the calendar", []probeParam{req("title", "string", "meeting title"), req("start", "string", "start time"), req("durationMinutes", "integer", "duration in minutes"),
		array(req("attendees", "", "attendees"), "string"), object(opt("location", "", "location"), opt("room", "string", "meeting room"), opt("building", "string", "building"))}},
	{"convertCurrency", "Convert an amount between currencies", []probeParam{req("amount", "number", "amount to convert"), req("from", "string", "source currency"), req("to", "string", "target currency")}},
	{"getStockQuote", "Get the latest quote for a stock symbol", []probeParam{req("symbol", "string", "stock symbol"), opt("exchange", "string", "stock exchange")}},
	{"translateText", "Translate text into another language", []probeParam{req("text", "string", "text to translate"), req("targetLanguage", "string", "target language"), enum(opt("formality", "string", "formality"), "formal", "informal")}},
	{"createInvoice", "Create an invoice for a customer", []probeParam{req("customerId", "string", "billed customer"),
		object(req("lineItem", "", "line item"), req("sku", "string", "item sku"), req("quantity", "integer", "item quantity"), req("unitPrice", "number", "unit price")), req("dueDate", "string", "due date")}},
	{"updateAddress", "Update the shipping address of a customer", []probeParam{req("customerId", "string", "customer id"),
		object(req("address", "", "address"), req("street", "string", "street"), req("city", "string", "address city"), req("postalCode", "string", "postal code"), req("country", "string", "country"))}},
	{"trackShipment", "Track a shipment by its tracking number", []probeParam{req("trackingNumber", "string", "tracking number"), enum(opt("carrier", "string", "carrier"), "ups", "fedex", "dhl")}},
	{"reserveTable", "Reserve a table at a restaurant", []probeParam{req("restaurant", "string", "restaurant"), req("date", "string", "reservation date"), req("time", "string", "reservation time"), req("partySize", "integer", "party size")}},
	{"setReminder", "Set a reminder for the user", []probeParam{req("text", "string", "reminder text"), req("remindAt", "string", "reminder time"), enum(opt("repeat", "string", "repeat"), "none", "daily", "weekly")}},
	{"searchProducts", "Search the product catalog", []probeParam{req("query", "string", "search query"),
		object(opt("filters", "", "filters"), opt("maxPrice", "number", "maximum price"), opt("category", "string", "category"), opt("inStock", "boolean", "in stock only")), enum(opt("sort", "string", "sort order"), "price", "rating", "newest")}},
	{"refundPayment", "Refund a payment to a customer", []probeParam{req("paymentId", "string", "payment id"), req("amount", "number", "amount to refund"), opt("reason", "string", "refund reason")}},
}

// ProbeTools returns the tool-calling probe's tools in the OpenAI tools format (compact JSON).
func ProbeTools() json.RawMessage { return probeToolsJSON }

var probeToolsJSON = func() json.RawMessage {
	var b strings.Builder
	b.WriteByte('[')
	for i, t := range probeTools {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"function","function":{"name":%q,"description":%q,"parameters":`, t.name, t.desc+".")
		writeSchema(&b, probeParam{typ: "object", props: t.params})
		b.WriteString("}}")
	}
	b.WriteByte(']')
	return json.RawMessage(b.String())
}()

func writeSchema(b *strings.Builder, p probeParam) {
	fmt.Fprintf(b, `{"type":%q`, p.typ)
	if p.desc != "" {
		fmt.Fprintf(b, `,"description":%q`, p.desc)
	}
	if len(p.enum) > 0 {
		e, _ := json.Marshal(p.enum)
		fmt.Fprintf(b, `,"enum":%s`, e)
	}
	if p.items != "" {
		fmt.Fprintf(b, `,"items":{"type":%q}`, p.items)
	}
	if p.typ == "object" {
		b.WriteString(`,"properties":{`)
		var reqs []string
		for i, c := range p.props {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(b, "%q:", c.name)
			writeSchema(b, c)
			if c.required {
				reqs = append(reqs, c.name)
			}
		}
		r, _ := json.Marshal(reqs)
		if reqs == nil {
			r = []byte("[]")
		}
		fmt.Fprintf(b, `},"required":%s,"additionalProperties":false`, r)
	}
	b.WriteByte('}')
}

// probeValue draws a value for a leaf parameter: its fact text and its JSON value.
func probeValue(r *rng, p probeParam) (string, any) {
	if len(p.enum) > 0 {
		v := p.enum[r.intn(len(p.enum))]
		return v, v
	}
	switch p.typ {
	case "integer":
		n := 1 + r.intn(9)
		return fmt.Sprint(n), n
	case "number":
		cents := 100 + r.intn(99900)
		s := fmt.Sprintf("%d.%02d", cents/100, cents%100)
		return s, json.Number(s)
	case "boolean":
		if r.intn(2) == 0 {
			return "no", false
		}
		return "yes", true
	case "array":
		a, b := probeWords[r.intn(len(probeWords))], probeWords[r.intn(len(probeWords))]
		return a + ", " + b, []any{a, b}
	}
	var v string
	switch low := strings.ToLower(p.name); {
	case strings.Contains(low, "email") || p.name == "to":
		v = strings.ToLower(probeNames[r.intn(len(probeNames))]) + "@example.com"
	case strings.Contains(low, "date") || strings.HasPrefix(low, "check") || low == "start" || low == "remindat":
		v = fmt.Sprintf("2026-%02d-%02d", 1+r.intn(12), 1+r.intn(28))
	case strings.Contains(low, "city") || low == "origin" || low == "destination":
		v = []string{"Lisbon", "Osaka", "Denver", "Nairobi", "Oslo", "Lima", "Hanoi", "Quito"}[r.intn(8)]
	default:
		v = fmt.Sprintf("%s-%04d", strings.ToUpper(p.name[:min(3, len(p.name))]), r.intn(10000))
	}
	return v, v
}

var probeWords = []string{"alpha", "bravo", "delta", "echo", "golf", "hotel", "lima", "oscar"}

// plantArgs draws the arguments of a call: every required parameter and each optional one
// with probability 1/2, as "- label: value" fact lines and the expected JSON object.
func plantArgs(r *rng, params []probeParam, facts *strings.Builder, skip map[string]any) map[string]any {
	out := map[string]any{}
	for _, p := range params {
		if !p.required && r.intn(2) == 0 {
			continue
		}
		if v, ok := skip[p.name]; ok {
			out[p.name] = v // supplied by an earlier step's result
			continue
		}
		if p.typ == "object" {
			out[p.name] = plantArgs(r, p.props, facts, nil)
			continue
		}
		text, v := probeValue(r, p)
		fmt.Fprintf(facts, "- %s: %s\n", p.desc, text)
		out[p.name] = v
	}
	return out
}

// toolChains are the two-step tasks: the second tool's customerId comes from the first
// call's result.
var toolChains = [][2]string{{"findCustomer", "listOrders"}, {"findCustomer", "updateAddress"}, {"findCustomer", "createTicket"}}

func probeToolByName(name string) probeTool {
	for _, t := range probeTools {
		if t.name == name {
			return t
		}
	}
	panic("workloads: no probe tool " + name)
}

// toolProbe is probe k: kinds cycle first (round), retry, step1 and step2 (a
// task's second step, with the first call and its result in the conversation); tools cycle
// through the catalog and chains through toolChains.
func toolProbe(r *rng, k int) traces.Request {
	kind := k % 4
	var msgs []traces.Message
	var class string
	var name string
	var args map[string]any
	switch kind {
	case 0, 1:
		t := probeTools[(k/4)%len(probeTools)]
		var facts strings.Builder
		args = plantArgs(r, t.params, &facts, nil)
		name = t.name
		task := t.desc + ".\n" + facts.String()
		msgs = []traces.Message{{Role: "user", Content: task}}
		class = "tool/first"
		if kind == 1 {
			class = "tool/retry"
			wrong, param := wrongCall(args)
			msgs = append(msgs,
				traces.Message{Role: "assistant", Content: "Calling " + name + " with " + wrong},
				traces.Message{Role: "user", Content: "Error from " + name + ": unknown parameter \"" + param + "\". Fix the call and try again."})
		}
	default:
		chain := toolChains[(k/4)%len(toolChains)]
		first, second := probeToolByName(chain[0]), probeToolByName(chain[1])
		var facts strings.Builder
		firstArgs := plantArgs(r, first.params, &facts, nil)
		customer := fmt.Sprintf("C-%05d", r.intn(100000))
		secondArgs := plantArgs(r, second.params, &facts, map[string]any{"customerId": customer})
		task := "Step 1: " + first.desc + ". Step 2: " + second.desc + ".\n" + facts.String()
		msgs = []traces.Message{{Role: "user", Content: task}}
		name, args, class = first.name, firstArgs, "tool/step1"
		if kind == 3 {
			result, _ := json.Marshal(map[string]any{"customerId": customer, "name": "Ada " + probeNames[r.intn(len(probeNames))]})
			msgs = append(msgs,
				traces.Message{Role: "assistant", Content: "Calling " + first.name + "."},
				traces.Message{Role: "user", Content: "Result of " + first.name + ": " + string(result)})
			name, args, class = second.name, secondArgs, "tool/step2"
		}
	}
	a, _ := json.Marshal(args)
	return traces.Request{
		Class:        class,
		OutputTokens: 160,
		Messages:     msgs,
		Tools:        ProbeTools(),
		Expect: []traces.Expectation{
			{Kind: traces.CheckToolCall, Name: name},
			{Kind: traces.CheckToolCall, Name: name, Arguments: a},
		},
	}
}

// wrongCall is the arguments with the first camelCase parameter written in snake_case (or,
// without one, an extra parameter), and that parameter's name.
func wrongCall(args map[string]any) (string, string) {
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	bad := map[string]any{}
	param := ""
	for _, k := range keys {
		snake := toSnake(k)
		if param == "" && snake != k {
			param = snake
			bad[snake] = args[k]
			continue
		}
		bad[k] = args[k]
	}
	if param == "" {
		param = "options"
		bad[param] = map[string]any{}
	}
	b, _ := json.Marshal(bad)
	return string(b), param
}

func toSnake(s string) string {
	var b strings.Builder
	for i, c := range s {
		if c >= 'A' && c <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			c += 'a' - 'A'
		}
		b.WriteRune(c)
	}
	return b.String()
}
