package iceberg

import "reflect"

var reflectConfig = reflect.TypeFor[Config]()
