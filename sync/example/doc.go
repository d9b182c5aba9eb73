// Package example holds two small states a statesync.Synchronizer can keep,
// each with its updates, initial update and JSON codec: Counter, a shared
// counter, and Set, a persistent set of strings. They show that the
// synchronizer is not tied to sharedconfig's map, and the synchronizer's
// own tests use them; they are not part of statesync's API.
package example
