package search

import (
	"slices"
	"strings"
)

// The lexicon: what caphub knows of how people ask for an operation, in
// general English, for every API alike. Nothing here names an API.

// Actions are the kinds of operation, named as caphub's CCOS categories
// (capability.InferCategories) name them.
const (
	ActionCreate = "crud.create"
	ActionRead   = "crud.read"
	ActionUpdate = "crud.update"
	ActionDelete = "crud.delete"
	ActionSearch = "search"
	ActionNotify = "notify"
)

// actions are the actions in a fixed order, and actionIndex their place.
var actions = [...]string{ActionCreate, ActionRead, ActionUpdate, ActionDelete, ActionSearch, ActionNotify}

const numActions = len(actions)

var actionIndex = func() map[string]int {
	m := map[string]int{}
	for i, a := range actions {
		m[a] = i
	}
	return m
}()

// actionVerbs maps a verb (as written, lower case) to the action it asks
// for. A query's verbs name its action; a capability's name, title and HTTP
// method name its own.
var actionVerbs = func() map[string]string {
	m := map[string]string{}
	for action, verbs := range map[string]string{
		ActionCreate: "create add new make open start post insert register submit raise write generate build launch begin spawn put",
		ActionRead:   "get show list read fetch view see display retrieve return download describe inspect lookup load browse enumerate count check",
		ActionUpdate: "update change edit set modify patch rename replace move edit toggle adjust alter enable disable mark assign configure archive",
		ActionDelete: "delete remove cancel stop abort halt drop destroy erase purge revoke clear unregister close discard kill terminate uninstall detach unset forget wipe scrap",
		ActionSearch: "search find query filter seek locate match",
		ActionNotify: "send notify message email alert ping tell announce broadcast dm",
	} {
		for _, v := range strings.Fields(verbs) {
			if _, dup := m[v]; !dup {
				m[v] = action
			}
		}
	}
	return m
}()

// phrasalVerbs are verbs of two or three words (a verb and its particles)
// that mean another verb, which a query is read with instead: "kick off a
// workflow" starts it, "get rid of a project" deletes it. Their words on
// their own say something else (kick, rid) or nothing (off, up: stop
// words). The particles may follow the verb's object when it is short
// ("kick someone out", "take a song off the playlist").
var phrasalVerbs = map[string]string{
	"kick off": "start", "start up": "start", "spin up": "create", "set up": "create", "sign up": "register",
	"kick out": "remove", "take off": "remove", "take away": "remove", "take out": "remove", "cross off": "remove",
	"get rid of": "delete", "tear down": "delete", "take down": "delete", "throw away": "delete", "throw out": "delete",
	"wipe out": "delete", "clean up": "delete", "shut down": "stop", "shut off": "stop", "turn off": "disable",
	"switch off": "disable", "turn on": "enable", "switch on": "enable", "call off": "cancel", "give up": "cancel",
	"bring back": "restore", "roll back": "revert", "roll out": "deploy", "look up": "search", "find out": "get",
	"pull up": "show", "bring up": "show", "fill in": "update", "fill out": "update", "tick off": "complete",
	"check off": "complete", "hand over": "transfer", "write down": "note", "jot down": "note", "note down": "note",
	"log in": "login", "sign in": "login", "log out": "logout", "sign out": "logout", "carry out": "run",
	"hold off": "pause", "let in": "invite", "send out": "send", "print out": "print", "back up": "backup",
}

// phrasalStarts are the first words of phrasalVerbs.
var phrasalStarts = func() map[string]bool {
	m := map[string]bool{}
	for p := range phrasalVerbs {
		m[p[:strings.IndexByte(p, ' ')]] = true
	}
	return m
}()

// thingsToo are verbs of an action that name a thing as often.
var thingsToo = wordSet("message email alert")

// alsoActions are other actions a verb may ask for: closing an issue is an
// update of its state in most APIs, setting a goal or a reminder creates
// one, and archiving (an update of its state first) may delete.
var alsoActions = map[string]string{"set": ActionCreate, "close": ActionUpdate, "archive": ActionDelete, "cancel": ActionUpdate, "stop": ActionUpdate, "abort": ActionUpdate, "halt": ActionUpdate}

// readQuestions start a question, which asks to read ("which files did it
// change", "is this user online").
var readQuestions = wordSet("which what who whom whose how is are does do did was were when where")

// methodActions is the action of an HTTP method.
var methodActions = map[string]string{
	"GET": ActionRead, "HEAD": ActionRead, "POST": ActionCreate,
	"PUT": ActionUpdate, "PATCH": ActionUpdate, "DELETE": ActionDelete,
}

// actionTerms are the index terms a query's action also looks for (each a
// stem), so that "open a bug report" finds operations named create.
var actionTerms = map[string][]string{
	ActionCreate: {"creat", "add", "new"},
	ActionRead:   {"get", "list", "retriev"},
	ActionUpdate: {"updat", "edit", "set"},
	ActionDelete: {"delet", "remov"},
	ActionSearch: {"search", "find", "list"},
	ActionNotify: {"send", "post", "messag"},
}

// abbreviations are written out on both sides, documents and queries.
var abbreviations = map[string]string{
	"repo": "repository", "repos": "repositories", "org": "organization", "orgs": "organizations",
	"pr": "pull request", "prs": "pull requests", "config": "configuration", "configs": "configurations",
	"info": "information", "msg": "message", "msgs": "messages", "env": "environment", "envs": "environments",
	"db": "database", "dbs": "databases", "dir": "directory", "dirs": "directories", "auth": "authentication",
	"img": "image", "imgs": "images", "pic": "picture", "pics": "pictures", "doc": "document", "docs": "documents",
	"app": "application", "apps": "applications", "sub": "subscription", "subs": "subscriptions",
	"admin": "administrator", "admins": "administrators", "desc": "description", "num": "number",
	"qty": "quantity", "addr": "address", "tx": "transaction", "txn": "transaction", "txns": "transactions",
	"k8s": "kubernetes", "ns": "namespace", "svc": "service", "acct": "account", "dm": "direct message",
	"dms": "direct messages", "cal": "calendar", "temp": "temperature", "stats": "statistics",
	"perms": "permissions", "perm": "permission", "ssh": "ssh", "gpg": "gpg", "url": "url",
}

// synonyms are general English words for the same thing. A query term also
// looks for its synonyms (at synonymWeight); the lists are symmetric, each
// line one group of words as written (they are stemmed when loaded).
var synonymGroups = []string{
	"bug issue ticket defect problem",
	"song track tune music",
	"album record",
	"singer artist musician band",
	"picture image photo",
	"folder directory",
	"file document",
	"person people user member account",
	"message chat conversation",
	"email mail",
	"customer client buyer",
	"payment charge",
	"refund reimbursement",
	"invoice bill",
	"team group squad",
	"job task",
	"meeting event appointment",
	"note memo",
	"star favorite like",
	"follower subscriber",
	"remove delete",
	"cancel abort",
	"crash failure error",
	"log logs",
	"key token",
	"copy fork clone duplicate",
	"merge combine",
	"comment reply",
	"release version",
	"webhook hook callback",
	"notification alert",
	"setting preference option configuration",
	"price cost",
	"size length",
	"search query lookup",
	"pod container",
	"invite invitation",
	"schedule calendar",
	"collaborator contributor",
	"playlist queue",
	"house home",
	"shop store",
	"product item",
	"order purchase",
	"coupon discount",
	"upload attach",
	"download export",
	"start begin",
	"restart reboot",
	"project board",
	"workspace organization",
	"emoji reaction",
	"recent latest newest last",
	"history log activity timeline",
	"archive close",
	"status state presence",
	"mute snooze silence",
	"stop halt terminate",
	"goal objective target",
	"todo task",
	"device speaker player",
	"password secret credential",
	"owner admin",
	"edit update modify",
	"photo avatar",
	"link url",
	"count number total",
}

// synonymWeight is the weight of a synonym against the word asked for (1).
const synonymWeight = 0.6

// firstPerson words ask about the caller; they look for these terms (as
// stems), which APIs use for the caller's own resources (/me, /user,
// authenticated_user, current user, viewer).
var firstPerson = wordSet("i me my mine myself am")

var firstPersonTerms = []string{"authent", "me", "current", "viewer"}

// questions are words that ask for a kind of thing: who asks for a user.
var questions = map[string][]string{"who": {"user", "member", "owner"}, "where": {"locat", "address"}, "when": {"time", "date", "schedul"}}

// synonyms maps a stem to the stems of its group, built once.
var synonyms = func() map[string][]string {
	m := map[string][]string{}
	for _, g := range synonymGroups {
		var stems []string
		for _, w := range strings.Fields(g) {
			stems = append(stems, Stem(w))
		}
		for _, s := range stems {
			for _, o := range stems {
				if o != s && !slices.Contains(m[s], o) {
					m[s] = append(m[s], o)
				}
			}
		}
	}
	return m
}()
