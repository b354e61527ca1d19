package dain

import (
	"github.com/dainx/dainx/dain/config"
)

// The configuration of a run is package config's; these are its names as
// package dain has always given them (the command line, eval and the C
// library use them). Methods, Influences, Entities and Signs, which build
// the stages, are stages.go's.

// Config holds every setting of a run (config.Config). DefaultConfig
// gives the paper's.
type Config = config.Config

// Choice is one accepted value of a Config field that picks the variant of
// a step, with its help text and the stage it builds (config.Choice).
type Choice[B any] = config.Choice[B]

// The types of Config's parts (package config says what each holds):
// Keep, what Run returns beside the report; EpochInfo, one finished
// training epoch as Config.OnEpoch receives it; Setting, one setting of
// Config for every place that names it (Settings lists them); Variant, a
// named method of `dainx eval`; and the typed settings.
type (
	Keep             = config.Keep
	EpochInfo        = config.EpochInfo
	Setting          = config.Setting
	Variant          = config.Variant
	MethodName       = config.MethodName
	InfluenceKind    = config.InfluenceKind
	LayerSet         = config.LayerSet
	EntityKind       = config.EntityKind
	SignKind         = config.SignKind
	SplitKind        = config.SplitKind
	BayesPriorGroups = config.BayesPriorGroups
	ValueSource      = config.ValueSource
	Graphs           = config.Graphs
	Exchange         = config.Exchange
	AugWeight        = config.AugWeight
	TableSharding    = config.TableSharding
)

// DefaultConfig returns the paper's settings (config.DefaultConfig).
func DefaultConfig() Config { return config.DefaultConfig() }

// CheckRatio reports a ratio that cannot work (config.CheckRatio).
func CheckRatio(r float64) error { return config.CheckRatio(r) }

// AugCount returns N_aug = ⌊ratio·nTrain⌋, or an error when it is above
// MaxAug (config.AugCount).
func AugCount(ratio float64, nTrain int) (int, error) { return config.AugCount(ratio, nTrain) }

// VariantNamed returns the variant called name (config.VariantNamed).
func VariantNamed(name string) (Variant, bool) { return config.VariantNamed(name) }

// FinalModelNamed returns the final model called name
// (config.FinalModelNamed).
func FinalModelNamed(name string) (Choice[struct{}], bool) { return config.FinalModelNamed(name) }

// SettingByKey returns the setting of provenance key key
// (config.SettingByKey).
func SettingByKey(key string) (Setting, bool) { return config.SettingByKey(key) }

// BayesSeed is the seed of the bayes-fm final model's Gibbs chain in a run
// of seed seed (config.BayesSeed).
func BayesSeed(seed uint64) uint64 { return config.BayesSeed(seed) }

// Settings returns the table of settings, one entry per setting of Config
// (config.Settings, read at each call).
func Settings() []Setting { return config.Settings() }

// Names returns the names of choices, in order (config.Names).
func Names[B any](choices []Choice[B]) []string { return config.Names(choices) }

// Help returns "a (doc), b (doc) or c (doc)" for a flag's help
// (config.Help).
func Help[B any](choices []Choice[B]) string { return config.Help(choices) }

// The accepted values of the settings, and the table of settings.
var (
	Models            = config.Models
	Predictors        = config.Predictors
	InfluenceLayers   = config.InfluenceLayers
	FinalModels       = config.FinalModels
	ValueSources      = config.ValueSources
	Splits            = config.Splits
	BayesPriorChoices = config.BayesPriorChoices
	TableShardings    = config.TableShardings
	Variants          = config.Variants
)

// The values and limits of the settings (package config documents each).
const (
	MaxRatio = config.MaxRatio
	MaxBatch = config.MaxBatch
	MaxAug   = config.MaxAug

	SplitLegacy = config.SplitLegacy
	SplitKeyed  = config.SplitKeyed

	FinalMLP          = config.FinalMLP
	FinalFM           = config.FinalFM
	FinalHybrid       = config.FinalHybrid
	FinalBayesFM      = config.FinalBayesFM
	FinalEnsemble     = config.FinalEnsemble
	FinalAuto         = config.FinalAuto
	PredictorEnsemble = config.PredictorEnsemble

	DefaultBayesRank      = config.DefaultBayesRank
	DefaultBayesSamples   = config.DefaultBayesSamples
	MaxBayesSamples       = config.MaxBayesSamples
	DefaultFMRank         = config.DefaultFMRank
	MaxFMRank             = config.MaxFMRank
	DefaultBayesAugWeight = config.DefaultBayesAugWeight

	BayesPriorsMode   = config.BayesPriorsMode
	BayesPriorsShared = config.BayesPriorsShared
	BayesPriorsAuto   = config.BayesPriorsAuto

	EstimatorTracIn            = config.EstimatorTracIn
	EstimatorAdam              = config.EstimatorAdam
	EstimatorInRun             = config.EstimatorInRun
	DefaultInfluenceEvery      = config.DefaultInfluenceEvery
	DefaultInfluenceValSample  = config.DefaultInfluenceValSample
	InfluenceUncertainty       = config.InfluenceUncertainty
	InfluenceUncertaintyTracIn = config.InfluenceUncertaintyTracIn

	ValuesPredictor = config.ValuesPredictor
	ValuesOracle    = config.ValuesOracle

	GraphsOn       = config.GraphsOn
	GraphsOff      = config.GraphsOff
	ExchangeAuto   = config.ExchangeAuto
	ExchangeDense  = config.ExchangeDense
	ExchangeSparse = config.ExchangeSparse
	AugWeightAuto  = config.AugWeightAuto
	AugWeightLearn = config.AugWeightLearn

	ShardTablesAuto  = config.ShardTablesAuto
	ShardTablesOn    = config.ShardTablesOn
	ShardTablesOff   = config.ShardTablesOff
	ShardTablesAbove = config.ShardTablesAbove
)
