// Package cli is a fixture: a CLI edge that grew a use case.
package cli

// tooLong is 61 lines from func to its closing brace.
func tooLong() int {
	n := 0
	n += 1
	n += 2
	n += 3
	n += 4
	n += 5
	n += 6
	n += 7
	n += 8
	n += 9
	n += 10
	n += 11
	n += 12
	n += 13
	n += 14
	n += 15
	n += 16
	n += 17
	n += 18
	n += 19
	n += 20
	n += 21
	n += 22
	n += 23
	n += 24
	n += 25
	n += 26
	n += 27
	n += 28
	n += 29
	n += 30
	n += 31
	n += 32
	n += 33
	n += 34
	n += 35
	n += 36
	n += 37
	n += 38
	n += 39
	n += 40
	n += 41
	n += 42
	n += 43
	n += 44
	n += 45
	n += 46
	n += 47
	n += 48
	n += 49
	n += 50
	n += 51
	n += 52
	n += 53
	n += 54
	n += 55
	n += 56
	n += 57
	return n
}

// handlers is a package-level func literal of 61 lines.
var handlers = map[string]func() int{
	"x": func() int {
		n := 0
		n += 1
		n += 2
		n += 3
		n += 4
		n += 5
		n += 6
		n += 7
		n += 8
		n += 9
		n += 10
		n += 11
		n += 12
		n += 13
		n += 14
		n += 15
		n += 16
		n += 17
		n += 18
		n += 19
		n += 20
		n += 21
		n += 22
		n += 23
		n += 24
		n += 25
		n += 26
		n += 27
		n += 28
		n += 29
		n += 30
		n += 31
		n += 32
		n += 33
		n += 34
		n += 35
		n += 36
		n += 37
		n += 38
		n += 39
		n += 40
		n += 41
		n += 42
		n += 43
		n += 44
		n += 45
		n += 46
		n += 47
		n += 48
		n += 49
		n += 50
		n += 51
		n += 52
		n += 53
		n += 54
		n += 55
		n += 56
		n += 57
		return n
	},
}

func small0() int { return 0 }

func small1() int { return 1 }

func small2() int { return 2 }

func small3() int { return 3 }

func small4() int { return 4 }

func small5() int { return 5 }

func small6() int { return 6 }

func small7() int { return 7 }

func small8() int { return 8 }

func small9() int { return 9 }

func small10() int { return 10 }

func small11() int { return 11 }

func small12() int { return 12 }

func small13() int { return 13 }

func small14() int { return 14 }

func small15() int { return 15 }

func small16() int { return 16 }

func small17() int { return 17 }

func small18() int { return 18 }

func small19() int { return 19 }

func small20() int { return 20 }

func small21() int { return 21 }

func small22() int { return 22 }

func small23() int { return 23 }

func small24() int { return 24 }

func small25() int { return 25 }

func small26() int { return 26 }

func small27() int { return 27 }

func small28() int { return 28 }

func small29() int { return 29 }

func small30() int { return 30 }

func small31() int { return 31 }

func small32() int { return 32 }

func small33() int { return 33 }

func small34() int { return 34 }

func small35() int { return 35 }

func small36() int { return 36 }

func small37() int { return 37 }

func small38() int { return 38 }

func small39() int { return 39 }

func small40() int { return 40 }

func small41() int { return 41 }

func small42() int { return 42 }

func small43() int { return 43 }

func small44() int { return 44 }

func small45() int { return 45 }

func small46() int { return 46 }

func small47() int { return 47 }

func small48() int { return 48 }

func small49() int { return 49 }

func small50() int { return 50 }

func small51() int { return 51 }

func small52() int { return 52 }

func small53() int { return 53 }

func small54() int { return 54 }

func small55() int { return 55 }

func small56() int { return 56 }

func small57() int { return 57 }

func small58() int { return 58 }

func small59() int { return 59 }

func small60() int { return 60 }

func small61() int { return 61 }

func small62() int { return 62 }

func small63() int { return 63 }

func small64() int { return 64 }

func small65() int { return 65 }

func small66() int { return 66 }

func small67() int { return 67 }

func small68() int { return 68 }

func small69() int { return 69 }

func small70() int { return 70 }

func small71() int { return 71 }

func small72() int { return 72 }

func small73() int { return 73 }

func small74() int { return 74 }

func small75() int { return 75 }

func small76() int { return 76 }

func small77() int { return 77 }

func small78() int { return 78 }

func small79() int { return 79 }

func small80() int { return 80 }

func small81() int { return 81 }

func small82() int { return 82 }

func small83() int { return 83 }

// small84 ends on line 301, one over the limit.
func small84() int { return 84 }
