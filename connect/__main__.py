import sys

from connect.main import main

sys.exit(main())
