package main

import (
	"strconv"
)

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
