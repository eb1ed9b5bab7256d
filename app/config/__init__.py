"""config.pbtxt as a protobuf ModelConfig: pure edits, validation, and apply = hot reload + atomic write + history."""
from app.config.apply import ApplyResult, ConfigPersistError, ConfigService, config_version
from app.config.contract import ContractChange, contract_changes, unservable
from app.config.caps import ServerCaps, gpu_count_from_metrics, server_caps, server_gpu_count
from app.config.edits import (
    disable_dynamic_batching, disable_sequence_batching, set_dynamic_batching, set_instance_group,
    set_instance_groups, set_max_batch_size, set_parameters, set_sequence_batching, set_settings,
)
from app.config.errors import (
    ConfigError, ConfigParseError, ConfigRejectedError, ConfigRolledBackError, ConfigTimeoutError,
    ConfigValidationError, ContractChangeError, HistoryError, Problem, ServerQueryError, StaleConfigError, clean,
)
from app.config.history import Action, ConfigHistory, Version, unified_diff
from app.config.model_config import (
    ModelConfig, copy_config, format_config, from_json, parse_config, read_config, to_dict, to_json,
    write_text_atomic,
)
from app.config.read import (
    dynamic_batching_of, instance_groups_of, parameters_of, sequence_batching_of, settings_of,
)
from app.config.settings import (
    DynamicBatching, InstanceGroup, Kind, ModelSettings, QueuePolicy, SequenceBatching, Strategy,
    TimeoutAction,
)
from app.config.validate import Limits, problems, validate

__all__ = [
    "Action", "ApplyResult", "ConfigError", "ConfigRolledBackError", "ConfigTimeoutError", "ContractChange",
    "ContractChangeError", "StaleConfigError", "clean", "config_version", "contract_changes", "unservable", "ConfigHistory", "ConfigParseError", "ConfigPersistError",
    "ConfigRejectedError", "ConfigService", "ConfigValidationError", "DynamicBatching", "HistoryError",
    "InstanceGroup", "Kind", "Limits", "ModelConfig", "ModelSettings", "Problem", "QueuePolicy",
    "SequenceBatching", "ServerCaps", "ServerQueryError", "Strategy", "TimeoutAction", "Version",
    "copy_config", "disable_dynamic_batching", "disable_sequence_batching", "dynamic_batching_of",
    "format_config", "from_json", "gpu_count_from_metrics", "instance_groups_of", "parameters_of",
    "parse_config", "problems", "read_config", "sequence_batching_of", "server_caps", "server_gpu_count",
    "set_dynamic_batching", "set_instance_group", "set_instance_groups", "set_max_batch_size",
    "set_parameters", "set_sequence_batching", "set_settings", "settings_of", "to_dict", "to_json",
    "unified_diff", "validate", "write_text_atomic",
]
